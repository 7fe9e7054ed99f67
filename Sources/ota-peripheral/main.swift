// Placeholder: the BlueZ peripheral tool is being written.
print("ota-peripheral: not built yet")
