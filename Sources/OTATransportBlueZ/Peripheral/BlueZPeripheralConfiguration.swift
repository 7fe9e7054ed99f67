#if os(Linux)
import OTACore

extension BlueZPeripheral {
    /// What link a peripheral's characteristics need.
    public enum Security: String, Sendable, Hashable, CaseIterable {
        /// Any link.
        case open
        /// An encrypted link: the central must pair (Just Works will do).
        case encrypted
        /// An encrypted link with an authenticated key (MITM protection): Passkey Entry or
        /// numeric comparison, not Just Works.
        case authenticated
    }

    /// How a ``BlueZPeripheral`` serves its model.
    public struct Configuration: Sendable {
        /// The adapter that plays the peripheral, such as `hci1`. It is powered on if it is off.
        public var adapter: String
        /// The local name advertised (in the scan response); empty for none.
        public var localName: String
        /// The flash the model sees; by default 1 MiB of ``NORFlash`` in 4 KiB sectors.
        public var flash: any FlashStorage
        /// Fault injection: once this many bytes of writes without response (the protocol's data)
        /// have arrived, the peripheral disconnects the central (`Device1.Disconnect`) and discards
        /// what arrives until the link is down, as if the link had been lost there. Happens once
        /// per ``BlueZPeripheral``; `nil` never.
        public var dropLinkAfterDataBytes: Int?
        /// Fault injection: once this many bytes of writes without response have arrived, the
        /// data path dies: further writes without response are discarded, while writes with
        /// response (a Control Point) still reach the model and get their answers, for
        /// ``dyingLinkDuration``; then the peripheral disconnects the central. What a central
        /// sees of a link in bluetoothd's disconnect timer. Happens once; `nil` never.
        public var dyingLinkAfterDataBytes: Int?
        /// How long a dying link keeps answering before it drops. Default 2 s.
        public var dyingLinkDuration: Duration = .seconds(2)
        /// While no central is connected, unregister and register the advertisement again this
        /// often; `nil` (the default) never.
        ///
        /// A real controller advertises continuously and needs none of this. BlueZ's emulated
        /// controllers (`btvirt`) report an advertisement to a scanner only at the moment
        /// advertising or scanning is enabled, and the kernel of the scanning side may hold the
        /// report of a connectable advertisement back until another report arrives; a central
        /// that starts scanning can then miss the peripheral for tens of seconds. Advertising
        /// again every few seconds gives it a fresh report each time.
        public var readvertiseInterval: Duration?
        /// What link the characteristics need: `open` (default), or encrypted, which makes a
        /// central pair first (issue 16, item 4).
        public var security = Security.open
        /// The passkey the peripheral's pairing agent enters (Passkey Entry, both sides typing the
        /// same six digits); `nil` pairs with Just Works. The agent is registered only when
        /// ``security`` is not `open`.
        public var passkey: UInt32?
        /// The clock every wait of the peripheral runs on: the model's reboot delays and the
        /// readvertising interval. A real peripheral uses the continuous clock; tests pass one
        /// they advance themselves.
        public var clock: any Clock<Duration>
        /// The bus where `bluetoothd` lives.
        public var bus: DBusConnection.Bus
        /// The path of the GATT application's object manager; the services, characteristics and
        /// the advertisement live below it.
        public var objectRoot: DBusObjectPath
        /// Receives one line per noteworthy event (registration, connections, reboots, link
        /// drops), for a tool's diagnostics. Called from any task.
        public var log: @Sendable (String) -> Void

        /// Creates a configuration.
        public init(
            adapter: String = "hci1",
            localName: String = "OTA-Test",
            flash: any FlashStorage = NORFlash(capacity: 1 << 20),
            dropLinkAfterDataBytes: Int? = nil,
            readvertiseInterval: Duration? = nil,
            clock: any Clock<Duration> = RealTimeClock(),
            bus: DBusConnection.Bus = .system,
            objectRoot: DBusObjectPath = "/org/swiftbleota/peripheral",
            log: @escaping @Sendable (String) -> Void = { _ in }
        ) {
            self.adapter = adapter
            self.localName = localName
            self.flash = flash
            self.dropLinkAfterDataBytes = dropLinkAfterDataBytes
            self.readvertiseInterval = readvertiseInterval
            self.clock = clock
            self.bus = bus
            self.objectRoot = objectRoot
            self.log = log
        }
    }

    /// What a ``BlueZPeripheral`` has seen so far.
    public struct Statistics: Sendable, Hashable {
        /// Centrals that connected.
        public var connections = 0
        /// Links that went down.
        public var disconnections = 0
        /// Writes given to the model.
        public var writes = 0
        /// Bytes of writes without response given to the model (the protocol's data).
        public var dataBytes = 0
        /// Writes discarded while an injected link drop was under way.
        public var discardedWrites = 0
        /// Notifications and indications handed to BlueZ.
        public var notifications = 0
        /// Times the model rebooted.
        public var reboots = 0
        /// Links the peripheral took down itself (reboots and injected drops).
        public var disconnectsRequested = 0

        /// No events yet.
        public init() {}
    }
}
#endif
