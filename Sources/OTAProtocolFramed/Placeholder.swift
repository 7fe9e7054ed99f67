let _framedPlaceholder = 0
