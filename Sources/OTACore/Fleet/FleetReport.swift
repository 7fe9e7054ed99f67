/// What a fleet run did to one device.
public struct FleetDeviceReport: Sendable {
    /// The device's ``FleetDevice/id``.
    public var id: String
    /// The last attempt's report when the device was updated, else `nil`.
    public var update: UpdateReport?
    /// Why each failed attempt failed, in order (empty for a device updated at the first try).
    public var failures: [OTAError]
    /// Attempts made, the last included (0 when no adapter reaches the device).
    public var attempts: Int
    /// The adapter of the last attempt.
    public var adapter: String?
    /// From the start of the first attempt to the end of the last one.
    public var duration: Duration
    /// When the last attempt ended, since the run started.
    public var finishedAt: Duration

    /// Whether the device was updated.
    public var succeeded: Bool { update != nil }
}

/// What a fleet run did.
public struct FleetReport: Sendable {
    /// One report per device, in the order the devices were given.
    public var devices: [FleetDeviceReport]
    /// From the run's start to the end of its last attempt.
    public var duration: Duration
    /// The most connections the scheduler had open through each adapter at once, by its own
    /// count (the adapter's own measurement is what proves the limit held).
    public var peakConnections: [String: Int]

    /// Devices updated.
    public var succeeded: Int { devices.filter(\.succeeded).count }
    /// Devices that failed every attempt.
    public var failed: [FleetDeviceReport] { devices.filter { !$0.succeeded } }
}
