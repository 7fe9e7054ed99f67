// The option, restoration and advertisement keys, with Darwin's names. Their string values are
// the stand-in's own (Darwin's are private constants nobody should compare against).

/// Init option: Bool, warn the user when Bluetooth is off at creation.
public let CBCentralManagerOptionShowPowerAlertKey: String = "kCBInitOptionShowPowerAlert"
/// Init option: the restore identifier that must stay the same across launches.
public let CBCentralManagerOptionRestoreIdentifierKey: String = "kCBRestoreIdentifierKey"
/// Scan option: Bool, one event per advertising packet.
public let CBCentralManagerScanOptionAllowDuplicatesKey: String = "kCBScanOptionAllowDuplicates"
/// Scan option: `[CBUUID]`, also report peripherals soliciting these services.
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey: String = "kCBScanOptionSolicitedServiceUUIDs"
/// Connect option: Bool, alert on connection while suspended.
public let CBConnectPeripheralOptionNotifyOnConnectionKey: String = "kCBConnectOptionNotifyOnConnection"
/// Connect option: Bool, alert on disconnection while suspended.
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey: String = "kCBConnectOptionNotifyOnDisconnection"
/// Connect option: Bool, alert per notification while suspended.
public let CBConnectPeripheralOptionNotifyOnNotificationKey: String = "kCBConnectOptionNotifyOnNotification"
/// Connect option: NSNumber, seconds before connecting.
public let CBConnectPeripheralOptionStartDelayKey: String = "kCBConnectOptionStartDelay"
/// Connect option: Bool, the system reconnects after a drop (iOS 17).
public let CBConnectPeripheralOptionEnableAutoReconnect: String = "kCBConnectOptionEnableAutoReconnect"
/// Restored state: `[CBPeripheral]` connected or connecting when the app was terminated.
public let CBCentralManagerRestoredStatePeripheralsKey: String = "kCBRestoredPeripherals"
/// Restored state: `[CBUUID]` the app was scanning for.
public let CBCentralManagerRestoredStateScanServicesKey: String = "kCBRestoredScanServices"
/// Restored state: `[String: Any]` the scan options.
public let CBCentralManagerRestoredStateScanOptionsKey: String = "kCBRestoredScanOptions"
/// Advertisement: String, the local name.
public let CBAdvertisementDataLocalNameKey: String = "kCBAdvDataLocalName"
/// Advertisement: NSNumber, the transmit power.
public let CBAdvertisementDataTxPowerLevelKey: String = "kCBAdvDataTxPowerLevel"
/// Advertisement: `[CBUUID]`, the advertised services.
public let CBAdvertisementDataServiceUUIDsKey: String = "kCBAdvDataServiceUUIDs"
/// Advertisement: `[CBUUID: Data]`, service data.
public let CBAdvertisementDataServiceDataKey: String = "kCBAdvDataServiceData"
/// Advertisement: Data, manufacturer data (company identifier first, little-endian).
public let CBAdvertisementDataManufacturerDataKey: String = "kCBAdvDataManufacturerData"
/// Advertisement: `[CBUUID]`, services in the overflow area.
public let CBAdvertisementDataOverflowServiceUUIDsKey: String = "kCBAdvDataOverflowServiceUUIDs"
/// Advertisement: NSNumber (Bool), whether the peripheral is connectable.
public let CBAdvertisementDataIsConnectable: String = "kCBAdvDataIsConnectable"
/// Advertisement: `[CBUUID]`, solicited services.
public let CBAdvertisementDataSolicitedServiceUUIDsKey: String = "kCBAdvDataSolicitedServiceUUIDs"
