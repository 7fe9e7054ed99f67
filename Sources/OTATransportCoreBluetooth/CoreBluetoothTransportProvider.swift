import Foundation
import OTACore

/// The CoreBluetooth transport as a tool or an app's registry sees it: addresses are
/// `CBPeripheral.identifier`s, written `cb:UUID` (or the bare UUID a scan reports).
///
/// The `ota` tool does not register it: on Linux CoreBluetooth is only the test stand-in
/// (docs/decisions/0018-corebluetooth-transport.md). An app that keeps a registry adds it:
///
/// ```swift
/// let registry = TransportRegistry([CoreBluetoothTransportProvider(central: central)])
/// ```
public struct CoreBluetoothTransportProvider: TransportProvider {
    /// The central every device is reached through.
    public let central: CoreBluetoothCentral
    /// The time limits of the connectors it makes.
    public var timeouts = CoreBluetoothTimeouts()
    /// How long to listen for a device's advertisement when the catalog needs it.
    public var advertisementWindow: Duration = .seconds(5)
    /// The pause between two parts of a multi-part update.
    public var restartDelay: Duration = .seconds(2)

    /// Creates the provider for `central`.
    public init(central: CoreBluetoothCentral) {
        self.central = central
    }

    public var name: String { "corebluetooth" }

    public var addressForm: String { "a CoreBluetooth identifier (cb:UUID)" }

    public func recognises(_ address: String) -> Bool { Self.identifier(in: address) != nil }

    /// The identifier in `address`: `cb:UUID` or a bare UUID.
    static func identifier(in address: String) -> UUID? {
        let text = address.hasPrefix("cb:") ? String(address.dropFirst(3)) : address
        guard text.count == 36 else { return nil }
        return UUID(uuidString: text)
    }

    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        guard let identifier = Self.identifier(in: address) else {
            throw OTAError(.invalidParameter, "device '\(address)' is not \(addressForm)")
        }
        return CoreBluetoothDevice(
            connector: central.connector(for: identifier, timeouts: timeouts), scanner: central.scanner(services: nil),
            advertisementWindow: advertisementWindow, restartDelay: restartDelay)
    }

    public func scanner(options: TransportOptions) -> any DeviceScanner {
        central.scanner(services: nil)
    }
}

/// A peripheral reached through CoreBluetooth.
struct CoreBluetoothDevice: TransportDevice {
    let connector: CoreBluetoothConnector
    let scanner: CoreBluetoothScanner
    let advertisementWindow: Duration
    let restartDelay: Duration

    var address: String { "cb:\(connector.identifier.uuidString)" }
    var summary: String { "\(address) through CoreBluetooth" }
    var firmwareProtocol: String? { nil }

    func advertisement(chosenProtocol: String?) async throws(OTAError) -> Advertisement? {
        guard chosenProtocol == nil else { return nil }
        return try await scanner.advertisement(of: connector.identifier.uuidString, within: advertisementWindow)
    }

    func check(_ images: [FirmwareImage]) {}

    func withSession<R>(_ request: SessionRequest, _ body: @concurrent (any TransportSession) async throws(OTAError) -> R) async throws(OTAError) -> R {
        try await body(DirectTransportSession(connector: connector, clock: scanner.clock, restartDelay: restartDelay))
    }
}
