let _nordicPlaceholder = 0
