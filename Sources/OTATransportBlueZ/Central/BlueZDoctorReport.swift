#if os(Linux)
/// What ``BlueZDoctor`` found: the state of the stack and the problems, each with its fix.
public struct BlueZDoctorReport: Sendable, Hashable {
    /// One problem and what to do about it.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// What is wrong ("hci0 is powered off").
        public var problem: String
        /// What to do ("run 'bluetoothctl power on'").
        public var fix: String

        /// "problem: fix".
        public var description: String { "\(problem): \(fix)" }
    }

    /// The bus examined, in words ("the system bus").
    public var bus: String
    /// Whether the bus could be reached.
    public var isBusReachable = false
    /// Whether bluetoothd owns `org.bluez` on the bus.
    public var isBluetoothdRunning = false
    /// bluetoothd's version ("5.66"), when it could be found.
    public var bluezVersion: String?
    /// The controllers the kernel lists (`hci0`…); `nil` when the kernel has no Bluetooth
    /// support or hides it (no `/sys/class/bluetooth`).
    public var kernelControllers: [String]?
    /// The adapters bluetoothd publishes.
    public var adapters: [BlueZAdapter] = []
    /// The problems found, most fundamental first. Empty when everything needed is there.
    public var findings: [Finding] = []
    /// bluetoothd's `[GATT] Channels`, which says whether it opens EATT bearers; `nil` when
    /// bluetoothd is not running.
    public var gattSettings: BluetoothdGATTSettings?
    /// For each connected device: whether bluetoothd may spread writes without response over
    /// several ATT bearers, from ``gattSettings`` and the device's Server Supported Features.
    public var connectedDevices: [ConnectedDevice] = []

    /// A connected device and whether writes without response to it may be reordered.
    public struct ConnectedDevice: Sendable, Hashable {
        /// Its address.
        public var address: String
        /// What bluetoothd's settings and its Server Supported Features mean for write order.
        public var bearers: BlueZBearerAssessment
    }

    /// One line on EATT and what it means for updates.
    public var eattSummary: String? {
        guard let settings = gattSettings else { return nil }
        if !settings.isEATTEnabled {
            return "EATT off (\(settings)): one ATT bearer per device, so write commands keep their order"
        }
        return
            "EATT on (\(settings)): to a device that offers EATT, bluetoothd spreads write commands over up to \(settings.channels) ATT bearers, which can reorder them; ota then sends writes without response as write requests, one at a time (in order, slower). For full speed set Channels = 1 in [GATT] of \(settings.configurationFile) and restart bluetoothd"
    }

    /// Creates an empty report for `bus`.
    public init(bus: String) {
        self.bus = bus
    }

    /// Whether an update can run: bluetoothd runs and at least one adapter is powered.
    public var isReady: Bool {
        isBluetoothdRunning && adapters.contains(where: \.isPowered)
    }
}
#endif
