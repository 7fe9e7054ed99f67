import Foundation
import OTACore

/// UDP as a ``TransportProvider``: `udp:HOST[:PORT]` reaches a device that takes one packet of
/// a protocol per datagram — MCUmgr's SMP over UDP, as Zephyr serves it on port 1337.
///
/// The provider knows no protocol: the tool tells it which one the datagrams carry, the
/// characteristic that protocol's client writes (the transport shows that one), and how long a
/// packet is (to join the client's writes into whole packets).
///
/// ```swift
/// let udp = UDPTransportProvider(protocolName: "mcumgr", characteristic: smp, advertisedService: service) { SMPHeader.frameLength(of: $0) }
/// ```
public struct UDPTransportProvider: TransportProvider {
    /// Bytes per write the transport reports: the largest datagram that crosses a 1500-byte
    /// Ethernet MTU unfragmented (1500 − 20 − 8), which is also Zephyr's default UDP MTU. A
    /// packet longer than a write is still one datagram.
    public static let maximumWriteLength = 1472

    /// The protocol the datagrams carry (`mcumgr`).
    public var protocolName: String
    /// The characteristic the protocol's client writes and subscribes to.
    public var characteristic: CharacteristicID
    /// The service a device reached this way is taken to advertise, so the catalog's family for
    /// the protocol matches it.
    public var advertisedService: GATTUUID?
    /// Bytes per write.
    public var maximumWrite = UDPTransportProvider.maximumWriteLength
    let packetLength: PacketAssembler.PacketLength

    /// A provider for datagrams of `protocolName`.
    public init(
        protocolName: String, characteristic: CharacteristicID, advertisedService: GATTUUID? = nil,
        packetLength: @escaping PacketAssembler.PacketLength
    ) {
        self.protocolName = protocolName
        self.characteristic = characteristic
        self.advertisedService = advertisedService
        self.packetLength = packetLength
    }

    /// `udp`.
    public var name: String { "udp" }

    /// "an SMP address over UDP (udp:HOST[:PORT])".
    public var addressForm: String { "an SMP address over UDP (udp:HOST[:PORT])" }

    /// Whether `address` starts with `udp:`.
    public func recognises(_ address: String) -> Bool { address.hasPrefix(UDPAddress.scheme) }

    /// The device at `address` (not contacted: UDP has no handshake).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a malformed address.
    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        let parsed = try UDPAddress(parsing: address)
        return UDPDevice(
            connector: UDPConnector(address: parsed, characteristic: characteristic, maximumWrite: maximumWrite, packetLength: packetLength),
            protocolName: protocolName, advertisedService: advertisedService)
    }

    /// Nothing to scan: UDP devices are named by address. The stream finishes at once.
    public func scanner(options: TransportOptions) -> any DeviceScanner { UDPScanner() }
}

/// A device at a UDP address.
struct UDPDevice: TransportDevice {
    let connector: UDPConnector
    let protocolName: String
    let advertisedService: GATTUUID?

    var address: String { connector.address.description }
    var summary: String { "\(connector.address) (\(protocolName) over UDP, one packet per datagram)" }
    /// What the datagrams carry.
    var firmwareProtocol: String? { protocolName }

    func advertisement(chosenProtocol: String?) -> Advertisement? {
        Advertisement(name: address, serviceUUIDs: advertisedService.map { [$0] } ?? [])
    }

    func check(_ images: [FirmwareImage]) {}

    func withSession<R>(_ request: SessionRequest, _ body: (any TransportSession) async throws(OTAError) -> R) async throws(OTAError) -> R {
        try await body(Session(connector: connector))
    }

    /// Real time, run where it is called.
    struct Session: TransportSession {
        let connector: any Connector
        var clock: any Clock<Duration> { ContinuousClock() }
        var executor: (any TaskExecutor)? { nil }
        var restartDelay: Duration { .seconds(2) }

        func run<R: Sendable>(_ body: @escaping @Sendable () async throws(OTAError) -> R) async throws(OTAError) -> R {
            try await body()
        }
    }
}

/// Finds nothing: UDP devices have no advertisement.
struct UDPScanner: DeviceScanner {
    var clock: any Clock<Duration> { ContinuousClock() }

    func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        AsyncThrowingStream { $0.finish() }
    }
}
