let _blueZPlaceholder = 0
