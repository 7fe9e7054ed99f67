import OTACore

/// The modelled radio link between the central (the app) and one device.
///
/// The model: data moves only inside connection events, one every ``connectionInterval``. In each
/// event the central sends LL packets, each answered by the peripheral (with data of its own or
/// an empty packet), separated by the 150 µs inter-frame space, until the event has no time
/// left or ``packetsPerEvent`` packets went. ATT PDUs bigger than ``llPayload`` are fragmented.
/// The central keeps at most ``writeQueueDepth`` writes without response waiting; see
/// ``WriteQueuePolicy`` for what happens to a write beyond that.
public struct LinkProfile: Sendable, Hashable {
    /// The physical layer.
    public var phy: PHY
    /// Time between connection events.
    public var connectionInterval: Duration
    /// Most LL packets the central sends per connection event (a platform limit: about 4–6 on
    /// iPhones), or `nil` to fill the whole event.
    public var packetsPerEvent: Int?
    /// The largest ATT MTU the device accepts; the link uses min(central's offer, this).
    public var deviceMaximumMTU: Int
    /// LL data length (27 without Data Length Extension, up to 251 with it).
    public var llPayload: Int
    /// Depth of the central's write-without-response queue, in writes.
    public var writeQueueDepth: Int
    /// Probability that a packet pair is lost on air and retransmitted in the next slot.
    public var packetErrorRate: Double
    /// Time to establish a connection, discover services and exchange the MTU.
    public var connectionSetupTime: Duration

    /// Creates a link profile.
    public init(
        phy: PHY,
        connectionInterval: Duration,
        packetsPerEvent: Int?,
        deviceMaximumMTU: Int,
        llPayload: Int,
        writeQueueDepth: Int = 16,
        packetErrorRate: Double = 0.002,
        connectionSetupTime: Duration = .milliseconds(400)
    ) {
        self.phy = phy
        self.connectionInterval = connectionInterval
        self.packetsPerEvent = packetsPerEvent
        self.deviceMaximumMTU = deviceMaximumMTU
        self.llPayload = llPayload
        self.writeQueueDepth = writeQueueDepth
        self.packetErrorRate = packetErrorRate
        self.connectionSetupTime = connectionSetupTime
    }

    /// The 150 µs inter-frame space between packets.
    public static let interFrameSpace: Duration = .microseconds(150)

    /// Air time of a central packet with `central` payload bytes answered by a peripheral packet
    /// with `peripheral` payload bytes, including both inter-frame spaces.
    public func pairTime(central: Int, peripheral: Int) -> Duration {
        phy.airTime(payload: central) + Self.interFrameSpace + phy.airTime(payload: peripheral) + Self.interFrameSpace
    }

    /// LL packets needed for one ATT PDU carrying a `value` of this many bytes (3 bytes of ATT
    /// header and 4 of L2CAP header ride along).
    public func fragments(forValue value: Int) -> Int {
        (value + 7 + llPayload - 1) / llPayload
    }

    /// The most ATT value bytes per second this link can carry one way with writes of `value`
    /// bytes, with no retransmissions and no protocol round trips: the yardstick for goodput.
    public func theoreticalGoodput(valueLength value: Int) -> Double {
        let pduBytes = value + 7
        let fullFragments = pduBytes / llPayload
        let lastFragment = pduBytes % llPayload
        // Average pair time per LL packet of this PDU.
        var pduTime = Double(fullFragments) * pairTime(central: llPayload, peripheral: 0).seconds
        if lastFragment > 0 { pduTime += pairTime(central: lastFragment, peripheral: 0).seconds }
        let packetsPerPDU = Double(fragments(forValue: value))
        let perPacket = pduTime / packetsPerPDU
        let interval = connectionInterval.seconds
        var packets = (interval / perPacket).rounded(.down)
        if let cap = packetsPerEvent { packets = min(packets, Double(cap)) }
        return packets / packetsPerPDU * Double(value) / interval
    }

    /// A one-line summary ("LE 2M, 15 ms interval, 6 packets/event, LL 251").
    public var summary: String {
        let cap = packetsPerEvent.map { "\($0) packets/event" } ?? "full events"
        return "\(phy), \(connectionInterval.milliseconds) ms interval, \(cap), LL \(llPayload)"
    }
}

extension Duration {
    var milliseconds: String {
        let ms = seconds * 1000
        return ms == ms.rounded() ? "\(Int(ms))" : String(oneDecimal: ms)
    }
}
