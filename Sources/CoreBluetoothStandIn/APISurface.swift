/// The CoreBluetooth members the stand-in declares, each with its Swift signature exactly as
/// `corebluetooth-api.md` (sections 1–5) writes it, for the test that checks the stand-in
/// against the document member for member.
///
/// Every signature here must appear in the document, and its declaration in the stand-in's
/// sources (modifiers aside: `optional` becomes a requirement with a default, `weak` delegates
/// are computed properties over weak storage, see docs/transports/corebluetooth.md).
public enum CoreBluetoothStandInSurface {
    /// One declared member.
    public struct Declaration: Sendable, Hashable {
        /// The type that declares it.
        public var type: String
        /// Its name as section 8's list of members names it (`scanForPeripherals(withServices:options:)`).
        public var member: String
        /// Its signature, as the document writes it.
        public var signature: String
    }

    private static func d(_ type: String, _ member: String, _ signature: String) -> Declaration {
        Declaration(type: type, member: member, signature: signature)
    }

    /// Every declared member.
    public static let declarations: [Declaration] = [
        // Section 1: CBCentralManager.
        d("CBCentralManager", "init()", "convenience init()"),
        d("CBCentralManager", "init(delegate:queue:)", "convenience init(delegate: (any CBCentralManagerDelegate)?, queue: dispatch_queue_t?)"),
        d(
            "CBCentralManager", "init(delegate:queue:options:)",
            "init(delegate: (any CBCentralManagerDelegate)?, queue: dispatch_queue_t?, options: [String : Any]? = nil)"),
        d("CBCentralManager", "delegate", "weak var delegate: (any CBCentralManagerDelegate)?"),
        d("CBManager", "state", "var state: CBManagerState { get }"),
        d("CBManager", "authorization", "class var authorization: CBManagerAuthorization { get }"),
        d(
            "CBCentralManager", "scanForPeripherals(withServices:options:)",
            "func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String : Any]? = nil)"),
        d("CBCentralManager", "stopScan()", "func stopScan()"),
        d("CBCentralManager", "isScanning", "var isScanning: Bool { get }"),
        d("CBCentralManager", "connect(_:options:)", "func connect(_ peripheral: CBPeripheral, options: [String : Any]? = nil)"),
        d("CBCentralManager", "cancelPeripheralConnection(_:)", "func cancelPeripheralConnection(_ peripheral: CBPeripheral)"),
        d("CBCentralManager", "retrievePeripherals(withIdentifiers:)", "func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral]"),
        d(
            "CBCentralManager", "retrieveConnectedPeripherals(withServices:)",
            "func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral]"),
        // Section 2: CBCentralManagerDelegate.
        d("CBCentralManagerDelegate", "centralManagerDidUpdateState(_:)", "func centralManagerDidUpdateState(_ central: CBCentralManager)"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:willRestoreState:)",
            "optional func centralManager(_ central: CBCentralManager, willRestoreState dict: [String : Any])"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didDiscover:advertisementData:rssi:)",
            "optional func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String : Any], rssi RSSI: NSNumber)"
        ),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didConnect:)",
            "optional func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didFailToConnect:error:)",
            "optional func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?)"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didDisconnectPeripheral:error:)",
            "optional func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?)"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)",
            "optional func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?)"
        ),
        d(
            "CBCentralManagerDelegate", "centralManager(_:connectionEventDidOccur:for:)",
            "optional func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral)"),
        d(
            "CBCentralManagerDelegate", "centralManager(_:didUpdateANCSAuthorizationFor:)",
            "optional func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)"),
        // Section 3: CBPeripheral.
        d("CBPeer", "identifier", "var identifier: UUID { get }"),
        d("CBPeripheral", "delegate", "weak var delegate: (any CBPeripheralDelegate)? { get set }"),
        d("CBPeripheral", "name", "var name: String? { get }"),
        d("CBPeripheral", "state", "var state: CBPeripheralState { get }"),
        d("CBPeripheral", "services", "var services: [CBService]? { get }"),
        d("CBPeripheral", "canSendWriteWithoutResponse", "var canSendWriteWithoutResponse: Bool { get }"),
        d("CBPeripheral", "discoverServices(_:)", "func discoverServices(_ serviceUUIDs: [CBUUID]?)"),
        d("CBPeripheral", "discoverCharacteristics(_:for:)", "func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService)"),
        d("CBPeripheral", "readValue(for:)", "func readValue(for characteristic: CBCharacteristic)"),
        d("CBPeripheral", "writeValue(_:for:type:)", "func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType)"),
        d("CBPeripheral", "setNotifyValue(_:for:)", "func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic)"),
        d("CBPeripheral", "maximumWriteValueLength(for:)", "func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int"),
        // Section 4: CBPeripheralDelegate (discovery, value update, write, notification state,
        // ready to send, Service Changed, name).
        d(
            "CBPeripheralDelegate", "peripheral(_:didDiscoverServices:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?)"),
        d(
            "CBPeripheralDelegate", "peripheral(_:didDiscoverCharacteristicsFor:error:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?)"),
        d(
            "CBPeripheralDelegate", "peripheral(_:didUpdateValueFor:error:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?)"),
        d(
            "CBPeripheralDelegate", "peripheral(_:didWriteValueFor:error:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?)"),
        d(
            "CBPeripheralDelegate", "peripheral(_:didUpdateNotificationStateFor:error:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?)"),
        d(
            "CBPeripheralDelegate", "peripheralIsReady(toSendWriteWithoutResponse:)",
            "optional func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)"),
        d(
            "CBPeripheralDelegate", "peripheral(_:didModifyServices:)",
            "optional func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])"),
        d("CBPeripheralDelegate", "peripheralDidUpdateName(_:)", "optional func peripheralDidUpdateName(_ peripheral: CBPeripheral)"),
        // Section 5: attributes and UUIDs.
        d("CBAttribute", "uuid", "var uuid: CBUUID { get }"),
        d("CBService", "peripheral", "weak var peripheral: CBPeripheral? { get }"),
        d("CBService", "isPrimary", "var isPrimary: Bool { get }"),
        d("CBService", "includedServices", "var includedServices: [CBService]? { get }"),
        d("CBService", "characteristics", "var characteristics: [CBCharacteristic]? { get }"),
        d("CBCharacteristic", "service", "weak var service: CBService? { get }"),
        d("CBCharacteristic", "properties", "var properties: CBCharacteristicProperties { get }"),
        d("CBCharacteristic", "value", "var value: Data? { get }"),
        d("CBCharacteristic", "descriptors", "var descriptors: [CBDescriptor]? { get }"),
        d("CBCharacteristic", "isNotifying", "var isNotifying: Bool { get }"),
        d("CBDescriptor", "characteristic", "weak var characteristic: CBCharacteristic? { get }"),
        d("CBDescriptor", "value", "var value: Any? { get }"),
        d("CBUUID", "init(string:)", "init(string theString: String)"),
        d("CBUUID", "init(data:)", "init(data theData: Data)"),
        d("CBUUID", "data", "var data: Data { get }"),
        d("CBUUID", "uuidString", "var uuidString: String { get }"),
    ]
}
