import Foundation
import OTACore
import OTATransportPacketLink

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
        return PacketLinkDevice(
            connector: UDPConnector(address: parsed, characteristic: characteristic, maximumWrite: maximumWrite, packetLength: packetLength),
            address: parsed.description, summary: "\(parsed) (\(protocolName) over UDP, one packet per datagram)", protocolName: protocolName,
            advertisedService: advertisedService)
    }

    /// Nothing to scan: UDP devices are named by address. The stream finishes at once.
    public func scanner(options: TransportOptions) -> any DeviceScanner { PacketLinkScanner() }
}
