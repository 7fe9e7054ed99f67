import OTACore

/// A named simulated device: its radio link, its flash and its update slot.
///
/// The built-in profiles reproduce the throughput table of the product's source article (200 KB
/// images from an iPhone); `docs/simulator.md` derives each parameter.
public struct DeviceProfile: Sendable, Hashable {
    /// The name used in `sim:NAME`.
    public var name: String
    /// One line describing the hardware and stack.
    public var summary: String
    /// The modelled link.
    public var link: LinkProfile
    /// Flash timing.
    public var flash: FlashTiming
    /// Size of the update slot in bytes.
    public var slotSize: Int
    /// Once the device has more than this much flash work queued, its controller stops
    /// accepting packets (LL flow control) until it catches up.
    public var backlogLimit: Duration
    /// Time from receiving a command to having its answer ready, beyond flash work.
    public var processingLatency: Duration
    /// Throughput the source article measured for this hardware, in kB/s, when it did.
    public var measuredThroughput: Double?
    /// The Device Information and Battery services the device exposes besides its protocol's
    /// (``StandardServicesProfile/none`` for neither).
    public var standardServices: StandardServicesProfile

    /// Creates a profile.
    public init(
        name: String,
        summary: String,
        link: LinkProfile,
        flash: FlashTiming,
        slotSize: Int,
        backlogLimit: Duration = .milliseconds(60),
        processingLatency: Duration = .microseconds(500),
        measuredThroughput: Double? = nil,
        standardServices: StandardServicesProfile = .none
    ) {
        self.name = name
        self.summary = summary
        self.link = link
        self.flash = flash
        self.slotSize = slotSize
        self.backlogLimit = backlogLimit
        self.processingLatency = processingLatency
        self.measuredThroughput = measuredThroughput
        self.standardServices = standardServices
    }
}

extension DeviceProfile {
    /// ESP32 SPI flash: 4 KiB sectors, ≈45 ms per sector erase, ≈400 kB/s page programming.
    static let espFlash = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(45), writeBytesPerSecond: 400_000)
    /// nRF52840 internal flash: 4 KiB pages, page erase and word writes as typical (not worst-case) figures.
    static let nrfFlash = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(10), writeBytesPerSecond: 250_000)

    /// One row of the built-in table: a profile with the default backlog and latency.
    private static func row(
        _ name: String, _ summary: String, _ link: LinkProfile, _ flash: FlashTiming, slot: Int, measured: Double,
        services: StandardServicesProfile
    ) -> DeviceProfile {
        DeviceProfile(
            name: name, summary: summary, link: link, flash: flash, slotSize: slot, measuredThroughput: measured, standardServices: services
        )
    }

    /// The standard services of the ESP32 boards: Device Information and a battery at 84 %.
    static let esp32Services = StandardServicesProfile(
        manufacturer: "Espressif Systems", modelNumber: "ESP32-DevKitC", hardwareRevision: "rev-B", firmwareRevision: "1.2.0", batteryLevel: 84
    )
    /// The ESP32-S3 boards': hardware revision rev-C, battery at 91 %.
    static let esp32S3Services = StandardServicesProfile(
        manufacturer: "Espressif Systems", modelNumber: "ESP32-S3-DevKitC-1", hardwareRevision: "rev-C", firmwareRevision: "2.0.1", batteryLevel: 91
    )
    /// The nRF52840's: hardware revision "52", the `hw_version` nrfutil writes for nRF52 images,
    /// battery at 88 %.
    static let nrfServices = StandardServicesProfile(
        manufacturer: "Nordic Semiconductor", modelNumber: "nRF52840", hardwareRevision: "52", firmwareRevision: "1.0.0", batteryLevel: 88
    )

    /// A link with the table's common figures: `packets` per connection event every `interval`.
    private static func link(_ phy: PHY, every interval: Duration, packets: Int, mtu: Int, llPayload: Int = 251) -> LinkProfile {
        LinkProfile(phy: phy, connectionInterval: interval, packetsPerEvent: packets, deviceMaximumMTU: mtu, llPayload: llPayload)
    }

    /// ESP32 with NimBLE that never raised its MTU: 20-byte writes, 1M PHY, no DLE.
    public static let esp32MTU23 = row(
        "esp32-mtu23-1m", "ESP32 + NimBLE, MTU 23 (no upgrade), LE 1M", link(.le1M, every: .milliseconds(30), packets: 6, mtu: 23, llPayload: 27), espFlash,
        slot: 4 << 20, measured: 4, services: esp32Services)
    /// ESP32 that accepted MTU 185, 1M PHY.
    public static let esp32MTU185 = row(
        "esp32-mtu185-1m", "ESP32 + NimBLE, MTU 185, LE 1M", link(.le1M, every: .milliseconds(30), packets: 4, mtu: 185), espFlash, slot: 4 << 20, measured: 22,
        services: esp32Services)
    /// ESP32-S3 with MTU 247 (244-byte writes), 1M PHY.
    public static let esp32S3MTU244OneM = row(
        "esp32s3-mtu244-1m", "ESP32-S3 + NimBLE, MTU 247 (244-byte writes), LE 1M", link(.le1M, every: .milliseconds(30), packets: 4, mtu: 247), espFlash,
        slot: 12 << 20, measured: 33, services: esp32S3Services)
    /// ESP32-S3 with MTU 247, 2M PHY.
    public static let esp32S3MTU244TwoM = row(
        "esp32s3-mtu244-2m", "ESP32-S3 + NimBLE, MTU 247 (244-byte writes), LE 2M", link(.le2M, every: .milliseconds(15), packets: 4, mtu: 247), espFlash,
        slot: 12 << 20, measured: 65, services: esp32S3Services)
    /// nRF52840 with MTU 247, 2M PHY.
    public static let nrf52840 = row(
        "nrf52840-mtu244-2m", "nRF52840, MTU 247 (244-byte writes), LE 2M", link(.le2M, every: .milliseconds(15), packets: 6, mtu: 247), nrfFlash,
        slot: 1 << 20, measured: 100, services: nrfServices)

    /// The built-in profiles, slowest first.
    public static let builtIn: [DeviceProfile] = [esp32MTU23, esp32MTU185, esp32S3MTU244OneM, esp32S3MTU244TwoM, nrf52840]

    /// The built-in profile named `name`.
    ///
    /// - Throws: ``OTAError/Code/connectionFailed`` listing the known names.
    public static func named(_ name: String) throws(OTAError) -> DeviceProfile {
        guard let profile = builtIn.first(where: { $0.name == name }) else {
            throw OTAError(
                .connectionFailed,
                "no simulated device profile '\(name)' (available: \(builtIn.map(\.name).joined(separator: ", ")))"
            )
        }
        return profile
    }
}
