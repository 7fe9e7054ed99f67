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
