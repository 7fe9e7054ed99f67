let _placeholder = 0
