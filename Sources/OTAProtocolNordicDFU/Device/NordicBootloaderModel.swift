import Foundation
import OTACore
import Synchronization

/// A simulated Nordic Secure DFU bootloader: the device side of the protocol, answering byte for
/// byte as the nRF5 SDK 15.3 BLE bootloader's request handler does
/// (`components/libraries/bootloader/dfu/nrf_dfu_req_handler.c`, `ble_dfu/nrf_dfu_ble.c`). Section
/// marks below: §1 GATT, §2 requests, §3 responses and result codes, §4 CRC, §5 packet receipts
/// and receive buffers, §6 the object flow, §7 resume and what survives a reset.
///
/// ## What it does
/// - **GATT** (§1): service `FE59` with Control Point (write + notify) and Packet (write without
///   response). A Control Point write while the central has not enabled notifications fails with
///   ATT `0xFD`; otherwise the write succeeds at ATT level and the answer is a notification
///   `60 op result [payload]` (§3).
/// - **Requests** (§2): Create, Set PRN, Calculate Checksum, Execute, Select and Abort. Protocol
///   version, Get MTU, Write over the Control Point, Ping, Get HW/FW version and unknown op codes
///   answer `60 op 02` (reduced protocol). A request too short for its op code answers
///   `60 op 03`; bytes after a complete request are ignored, as the SDK ignores them. Select or
///   Create of an object type other than 1 or 2 answers `0x05` and, as in the SDK, makes the
///   following Execute, Calculate Checksum and Packet writes fail with `0x05` until the next
///   valid Select or Create.
/// - **Command object**: up to ``Configuration/maximumCommandObjectSize`` bytes in RAM. Create
///   resets *all* progress (§6 step 3). Execute runs the init packet checks in the SDK's order
///   (§3): decode (`0x05`) → signature when ``Configuration/requiresSignature`` (`0B 08`, `0B 0B`;
///   a present signature is accepted **without verification**: the simulator holds no key) →
///   firmware type (`0B 04`) → hash type SHA-256 (`0B 09`) → `hw_version` (`0B 04` missing,
///   `0B 06` different) → `sd_req` (`0B 07`) → `fw_version` (`0B 05`, `0B 04` missing) → size
///   fields (`0B 04`) → room in the bank (`0x04`, as SDK 15.3's `nrf_dfu_cache_prepare()` failure).
///   Any failure after decoding drops the init packet and all progress, as the SDK's
///   `dfu_progress_reset()` does. An accepted init packet is written to the settings page in
///   flash (``BootloaderSettings``) and survives resets; executing it again answers success.
/// - **Data objects** (§6): Create needs an executed init packet (`0x08`), a size > 0 (`0x03`),
///   a multiple of the page size unless it ends the image (`0x03`), at most
///   ``Configuration/maximumDataObjectSize`` (`0x04`) and must not pass the image's end (`0x08`);
///   checks in this order, as the SDK. It rewinds the running offset and CRC to the last executed
///   object and erases the object's pages. Packets are written to flash at the running offset; a
///   packet that would overflow the object is discarded with result `0x03`, which (like every
///   Packet write result) is only visible when it falls on a receipt notification: `60 03 03`.
///   Execute needs the object complete (`0x08`); executing again an object that was already
///   executed answers `0x08` as SDK 15.x–17 bootloaders do in the field (§7). The Execute that
///   completes the image checks SHA-256 of the received image, byte-reversed, against the init
///   packet (`0B 0C` on mismatch), answers, and resets the device after
///   ``Configuration/resetDelay`` whatever the outcome (SDK: `NRF_DFU_EVT_DFU_COMPLETED` follows
///   the response in both cases). On success the image is recorded as installed.
/// - **CRC and PRN** (§4, §5): CRC-32 of the init bytes received (command object) or cumulative
///   over the image (data). After every N-th Packet write since the last Create or Set PRN the
///   device sends `60 03 01 offset crc`.
/// - **Abort** (`0C`): no answer; the device resets after ``Configuration/resetDelay`` (§2).
/// - **Persistence** (§7): progress survives a disconnect (RAM). A reset (``rebooted()``, Abort,
///   the end of an update, the inactivity timeout) loses all RAM progress; the executed init packet,
///   the installed versions and the installed image record live in the settings page (the last
///   sector(s) of the flash slot) and survive, so Select(command) reports the whole init packet
///   and Select(data) offset 0 after a reset.
///
/// ## Receive buffers (§5)
/// Every Packet write needs one of ``Configuration/receiveBufferCount`` buffers; a data packet
/// keeps it until the flash has written it, behind any erase a Create queued. A packet that finds
/// no free buffer is **dropped silently** (``Counters/packetsDropped``), leaving the central to
/// notice the offset/CRC mismatch. ``PeripheralContext`` offers no clock, so the model keeps its
/// own flash timeline from ``Configuration/flashPageEraseTime`` and
/// ``Configuration/flashWriteBytesPerSecond`` and needs "now":
/// - with a `clock` (e.g. `{ simulation.now }` in the simulator), packets are placed on the host's
///   time line. Every packet delivered within one simulated connection event sees the same time,
///   which overstates occupancy slightly;
/// - without one, a deterministic credit approximation: each packet advances a synthetic clock by
///   ``Configuration/packetSpacingWithoutClock``, and each Control Point request or receipt
///   notification lets the flash catch up completely (the central waited for an answer there).
///   It cannot see the central's own pauses (e.g. the 400 ms clients wait after the first Create).
///
/// ## Inactivity timeout (§1, §7)
/// SDK 15.3 restarts the inactivity timer at boot, on Create(command) (`NRF_DFU_EVT_DFU_STARTED`)
/// and on a successful data Execute (`NRF_DFU_EVT_OBJECT_RECEIVED`), and resets when it expires.
/// ``PeripheralContext`` has no timers and a scheduled ``PeripheralContext/reboot(after:)`` cannot
/// be cancelled, so the model checks lazily, and only when it has a `clock`: when a central
/// connects, or writes, after the deadline, the reset is taken to have happened at the deadline.
/// If the link was up then, the model answers nothing and asks the host to reboot now (the link
/// drops, as it would have); otherwise it starts the connection from freshly reset RAM. Without a
/// clock the timeout is not modelled.
///
/// ## Simplifications and choices
/// - Signatures (init packet and boot validation) are never verified; `boot_validation` entries
///   and the SoftDevice info structure of SoftDevice images are not checked.
/// - Every image type goes to the same bank, from offset 0 of the slot; after an update the model
///   stays a bootloader (the installed version becomes the floor for the next update; a
///   SoftDevice update does not change ``Configuration/installedSoftDevice``).
/// - Re-executing an executed data object answers `0x08`, as clients report for SDK 15.x–17
///   (§7; both Nordic clients take it as "already executed"); the 15.3 request handler's size
///   check alone would let it pass.
/// - Empty Control Point writes and writes longer than ``controlPointMaximumLength`` fail at ATT
///   level (`0x0D`); so do Packet writes longer than ``Configuration/maximumPacketLength``
///   (a write without response: the central never learns). Empty Packet writes are ignored.
/// - Packet writes the SDK would leak a receive buffer for (rejected data writes) free it at once.
public final class NordicBootloaderModel: RunningDeviceModel {
    /// Build options of the simulated bootloader, named after the SDK's `sdk_config.h` options.
    public struct Configuration: Sendable, Hashable {
        /// `NRF_DFU_HW_VERSION`: the `hw_version` init packets must carry. Default 52.
        public var hardwareVersion: UInt32 = 52
        /// The FWID of the SoftDevice in flash, matched against `sd_req`; `nil` for a device
        /// without SoftDevice. Default 0x0100.
        public var installedSoftDevice: UInt16? = 0x0100
        /// Application version before any update (`s_dfu_settings.app_version` of a fresh
        /// device); once the model has written its settings page, the page's value wins. Default 0.
        public var installedApplicationVersion: UInt32 = 0
        /// Bootloader version before any update; bootloader updates must be newer. Default 0.
        public var installedBootloaderVersion: UInt32 = 0
        /// `INIT_COMMAND_MAX_SIZE`: the command object limit Select(command) reports. Default 512.
        public var maximumCommandObjectSize = 512
        /// `DATA_OBJECT_MAX_SIZE`: the data object limit Select(data) reports. Default 4096.
        public var maximumDataObjectSize = 4096
        /// `CODE_PAGE_SIZE`: data objects other than the last must be multiples of it; Create
        /// erases whole pages. Default 4096 (nRF52).
        public var pageSize = 4096
        /// The Packet characteristic's maximum length (`MAX_DFU_PKT_LEN`, ATT MTU 247 − 3).
        /// Longer writes are refused at ATT level. Default 244.
        public var maximumPacketLength = 244
        /// `MAX_DFU_BUFFERS`: receive buffers for Packet writes (page size / packet length + 1).
        /// Default 17.
        public var receiveBufferCount = 17
        /// Time the buffer model charges to erase one page. Default 10 ms, the simulator's
        /// nRF52840 figure (the datasheet's worst case is 85 ms).
        public var flashPageEraseTime: Duration = .milliseconds(10)
        /// Programming speed the buffer model uses, bytes per second. Default 250 000, the
        /// simulator's nRF52840 figure.
        public var flashWriteBytesPerSecond: Double = 250_000
        /// Without a clock: the time each Packet write stands for in the buffer model. Default
        /// 2.5 ms (6 packets per 15 ms connection event).
        public var packetSpacingWithoutClock: Duration = .microseconds(2500)
        /// Whether init packets must be signed (`NRF_DFU_REQUIRE_SIGNED_APP_UPDATE`; the SDK also
        /// always requires it for SoftDevice and bootloader updates, this model applies the one
        /// option to every type). Default `false`: the simulator cannot verify ECDSA signatures,
        /// and accepts a present one without verifying it.
        public var requiresSignature = false
        /// The public key compiled into the bootloader (`pk` in `dfu_public_key.c`). When set,
        /// every init packet must be signed and its signature must verify with it, as on a real
        /// Secure DFU bootloader; a signature that does not verify is refused with 0x05 Invalid
        /// Object. Default `nil`: no key, and `requiresSignature` alone decides.
        public var publicKey: TrustedKey?
        /// `NRF_DFU_APP_DOWNGRADE_PREVENTION`: applications must not be older than the installed
        /// one, and must carry `fw_version`. Default `true`.
        public var preventsDowngrade = true
        /// Whether `sd_req` value 0xFFFE means "any SoftDevice". SDK 15.3's `sd_req_check()` has no
        /// such case (0xFFFE only matches a SoftDevice whose FWID is 0xFFFE), so the default is
        /// `false`; set it to model bootloaders that honour pc-nrfutil's default.
        public var acceptsAnySoftDevice = false
        /// `NRF_DFU_DEBUG`: a debug bootloader skips version checks for packets with `is_debug`.
        /// Default `false`.
        public var isDebugBuild = false
        /// `BOOTLOADER_SIZE`: the largest `bl_size` accepted (else 0x04). Default 24 KiB.
        public var maximumBootloaderSize = 0x6000
        /// `NRF_BL_DFU_INACTIVITY_TIMEOUT_MS`: reset after this long without DFU activity
        /// (needs a clock). Default 120 s.
        public var inactivityTimeout: Duration = .seconds(120)
        /// Delay between the last response (or an Abort) and the reset. Default 300 ms.
        public var resetDelay: Duration = .milliseconds(300)

        /// The defaults documented on each property.
        public init() {}

        /// A bootloader a fast central outruns: four receive buffers and flash that programs
        /// 40 kB/s (a SoftDevice that grants few flash timeslots while the radio is busy), so
        /// packets sent without waiting for receipts find no buffer and are dropped, the field
        /// failure of SDK 15 bootloaders on fast phones ("bytes lost", CRC mismatch). A stress
        /// case for flow control, not a measured part.
        public static var droppingPackets: Configuration {
            var configuration = Configuration()
            configuration.receiveBufferCount = 4
            configuration.flashWriteBytesPerSecond = 40_000
            return configuration
        }
    }

    /// Transfer state, for inspection.
    public struct Progress: Sendable, Hashable {
        /// The object type the last Select or Create chose; `nil` after an invalid type.
        public var currentObject: DFUObjectType?
        /// Declared size of the command object (0 before any Create).
        public var commandObjectSize: Int
        /// Init packet bytes received.
        public var commandOffset: Int
        /// CRC-32 of those bytes.
        public var commandCRC: UInt32
        /// Whether an init packet has been executed and accepted (received now or kept in flash).
        public var initPacketAccepted: Bool
        /// The image size that init packet announced.
        public var firmwareSize: Int?
        /// Size of the data object created and not yet executed.
        public var dataObjectSize: Int?
        /// Running image offset (what Select(data) reports).
        public var offset: Int
        /// CRC-32 of the image from byte 0 to ``offset``.
        public var crc: UInt32
        /// Image offset at the end of the last executed data object (`offset_last`).
        public var executedOffset: Int
        /// CRC-32 of the image up to ``executedOffset`` (`crc_last`).
        public var executedCRC: UInt32
        /// The packet receipt notification interval (0 = off).
        public var packetReceiptInterval: UInt16
        /// Receive buffers waiting for their flash write, as of the last event.
        public var receiveBuffersInUse: Int
        /// Whether the device is about to reset (after the last Execute or an Abort) and ignores
        /// further writes.
        public var isResetting: Bool
    }

    /// What happened since the model was made (kept across resets).
    public struct Counters: Sendable, Hashable {
        /// Packet writes that reached the bootloader.
        public var packetsReceived = 0
        /// Packet writes dropped for want of a receive buffer.
        public var packetsDropped = 0
        /// Packet writes processed but refused (too long for the object, no init packet, invalid object).
        public var packetsRefused = 0
        /// Packet receipt notifications sent.
        public var receiptNotifications = 0
        /// Resets caused by the inactivity timeout.
        public var inactivityResets = 0
        /// Updates completed and installed.
        public var updatesInstalled = 0
        /// Final Executes whose image hash did not match the init packet.
        public var verificationFailures = 0
    }

    /// The Control Point's maximum attribute length (`BLE_GATT_ATT_MTU_DEFAULT`, §1).
    public static let controlPointMaximumLength = 23

    /// The build options.
    public let configuration: Configuration
    private let clock: (@Sendable () -> Duration)?
    private let shared: Mutex<Shared>

    /// Creates a bootloader.
    ///
    /// - Parameters:
    ///   - configuration: Build options.
    ///   - clock: The host's "now" (for example `{ simulation.now }`), used by the receive buffer
    ///     model and the inactivity timeout; without it the buffers use a synthetic clock and the
    ///     timeout is not modelled (see the type's documentation).
    public init(configuration: Configuration = Configuration(), clock: (@Sendable () -> Duration)? = nil) {
        self.configuration = configuration
        self.clock = clock
        shared = Mutex(Shared(run: Run(configuration: configuration, clocked: clock != nil, bootTime: clock?())))
    }

    public var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: DFUGATTProfile.service,
                characteristics: [
                    .init(uuid: DFUGATTProfile.controlPoint.characteristic, properties: [.write, .notify]),
                    .init(uuid: DFUGATTProfile.packet.characteristic, properties: [.writeWithoutResponse]),
                ]
            )
        ]
    }

    // MARK: - Inspection

    /// The transfer state now.
    public var progress: Progress {
        shared.withLock { shared in
            let run = shared.run
            return Progress(
                currentObject: run.currentObject,
                commandObjectSize: run.commandSize,
                commandOffset: run.command.count,
                commandCRC: run.commandCRC.value,
                initPacketAccepted: run.accepted != nil,
                firmwareSize: run.accepted?.firmwareSize,
                dataObjectSize: run.objectSize,
                offset: run.offset,
                crc: run.crc.value,
                executedOffset: run.executedOffset,
                executedCRC: run.executedCRC,
                packetReceiptInterval: run.prnTarget,
                receiveBuffersInUse: run.pool.buffersInUse,
                isResetting: run.resetting
            )
        }
    }

    /// Counters since the model was made.
    public var counters: Counters { shared.withLock { $0.counters } }

    /// The settings page as stored in flash; `nil` before the model has seen its flash or when
    /// it never wrote one.
    public var storedSettings: BootloaderSettings? {
        shared.withLock { shared in
            guard let flash = shared.flash,
                let region = BootloaderSettings.region(in: flash, initCapacity: limits.command)
            else { return nil }
            return BootloaderSettings.read(from: flash, region: region)
        }
    }

    /// The image the last successful update installed (size, CRC-32, SHA-256, type, version).
    public var installedImage: BootloaderSettings.InstalledImage? { storedSettings?.installedImage }

    // MARK: - DeviceModel

    public func connected(_ peripheral: any PeripheralContext) {
        shared.withLock { shared in
            prepare(&shared, flash: peripheral.flash)
            _ = expireIfInactive(&shared, linkUp: false)
            shared.run.connectedAt = clock?() ?? .zero
        }
    }

    public func disconnected() {
        shared.withLock { $0.run.connectedAt = nil }
    }

    public func rebooted() {
        shared.withLock { shared in
            shared.run = Run(configuration: configuration, clocked: clock != nil, bootTime: clock?())
            shared.restored = nil
        }
    }

    // MARK: - RAM that outlives the central

    /// (An array, not `Data`: LeakSanitizer cannot follow a global `Data`'s storage and reports
    /// it as leaked, which failed every fuzz run reaching it; see OTATrust's `LibCrypto`.)
    private static let runningMagic: [UInt8] = Array("NordicDFU-progress-1\n".utf8)

    /// The request handler's progress (`s_dfu_settings.progress` and the init command as they are
    /// in RAM: the current object, the command object's bytes, the data offset and CRCs, the
    /// object created, the PRN), which the SDK keeps across a central's disconnect until the
    /// bootloader resets: empty when nothing was received.
    public var runningState: Data {
        shared.withLock { shared in
            let run = shared.run
            guard run.commandSize > 0 || run.offset > 0 || run.accepted != nil else { return Data() }
            var writer = ByteWriter(capacity: Self.runningMagic.count + 33 + run.command.count)
            writer.bytes(Self.runningMagic)
            writer.u8(run.currentObject?.rawValue ?? 0)
            writer.u32(UInt32(clamping: run.commandSize))
            writer.u32(UInt32(clamping: run.offset))
            writer.u32(run.crc.value)
            writer.u32(UInt32(clamping: run.executedOffset))
            writer.u32(run.executedCRC)
            writer.u32(UInt32(clamping: run.objectSize.map { $0 + 1 } ?? 0))
            writer.u32(UInt32(run.prnTarget))
            writer.u32(UInt32(clamping: run.command.count))
            writer.bytes(run.command)
            return writer.data
        }
    }

    /// Restores what ``runningState`` saved, over the init packet the settings page holds. A state
    /// ``runningState`` would not write (a PRN past 16 bits, an executed offset past the offset, a
    /// command longer than its object) is refused, not taken in part.
    public func restore(runningState data: Data) throws {
        guard !data.isEmpty else {
            shared.withLock { $0.restored = nil }
            return
        }
        var reader = ByteReader(data)
        guard reader.bytes(Self.runningMagic.count).map([UInt8].init) == Self.runningMagic, let object = reader.u8(), object <= 2,
            let commandSize = reader.u32(), let offset = reader.u32(), let crc = reader.u32(), let executedOffset = reader.u32(),
            let executedCRC = reader.u32(), let objectSize = reader.u32(), let prnTarget = reader.u32(), let commandCount = reader.u32(),
            commandCount <= commandSize, executedOffset <= offset, prnTarget <= UInt16.max, let command = reader.bytes(Int(commandCount)),
            reader.remaining == 0
        else {
            throw OTAError(.invalidParameter, "not a saved Nordic DFU bootloader's progress")
        }
        let progress = RunningProgress(
            currentObject: DFUObjectType(rawValue: object), commandSize: Int(commandSize), command: Array(command), offset: Int(offset),
            crc: crc, executedOffset: Int(executedOffset), executedCRC: executedCRC, objectSize: objectSize == 0 ? nil : Int(objectSize) - 1,
            prnTarget: UInt16(prnTarget))
        shared.withLock { $0.restored = progress }
    }

    /// The SoftDevice answers a Control Point write at once (`nrf_dfu_ble.c` replies to the
    /// write authorization request, then queues the request for the scheduler); the answer comes
    /// as a notification once the request handler has run (§1).
    public var acknowledgesWritesOnArrival: Bool { true }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        switch characteristic {
        case DFUGATTProfile.controlPoint:
            guard kind == .withResponse else { return .writeNotPermitted }
            guard value.count <= Self.controlPointMaximumLength else { return .invalidAttributeValueLength }
            // The SDK authorizes Control Point writes only when notifications are on (§1).
            guard peripheral.isSubscribed(to: DFUGATTProfile.controlPoint) else { return .cccdImproperlyConfigured }
            guard !value.isEmpty else { return .invalidAttributeValueLength }
            let flash = peripheral.flash
            let effect = shared.withLock { shared -> Effect in
                prepare(&shared, flash: flash)
                if expireIfInactive(&shared, linkUp: true) { return Effect(reboot: .zero) }
                guard !shared.run.resetting else { return Effect() }
                shared.run.pool.synchronize(hostNow: clock?())
                return handleRequest([UInt8](value), &shared, flash: flash)
            }
            apply(effect, peripheral)
            if let erase = effect.erase {
                // The answer left when the erase was queued; the erase runs now (§6).
                shared.withLock { shared in self.erase(erase, &shared.run, flash: flash) }
            }
            return .success
        case DFUGATTProfile.packet:
            guard kind == .withoutResponse else { return .writeNotPermitted }
            guard value.count <= max(1, configuration.maximumPacketLength) else { return .invalidAttributeValueLength }
            guard !value.isEmpty else { return .success }
            // Read once per packet: each reading of the context's flash is a witness call and an
            // existential to retain and destroy.
            let flash = peripheral.flash
            let effect = shared.withLock { shared -> Effect in
                prepare(&shared, flash: flash)
                if expireIfInactive(&shared, linkUp: true) { return Effect(reboot: .zero) }
                guard !shared.run.resetting else { return Effect() }
                return receivePacket(value, &shared, flash: flash)
            }
            apply(effect, peripheral)
            return .success
        default:
            return .writeNotPermitted
        }
    }

    // MARK: - State

    /// RAM state: what a reset loses.
    private struct Run {
        var booted = false
        /// The settings page as last read or written.
        var settings: BootloaderSettings
        var settingsRegion: Range<Int>?
        /// Bytes available to images: from 0 to the settings page, in whole pages.
        var bankCapacity = 0

        // Command object (`s_dfu_settings.progress.command_*` and `init_command`).
        var commandSize = 0
        var command: [UInt8] = []
        var commandCRC = CRC32()
        /// `m_valid_init_cmd_present`, with what the packet said.
        var accepted: AcceptedInitPacket?

        // Data objects (`firmware_image_offset/crc`, `_last`, `data_object_size`).
        var offset = 0
        var crc = CRC32()
        var executedOffset = 0
        var executedCRC: UInt32 = 0
        /// Size of the data object created and not executed yet; `nil` once executed.
        var objectSize: Int?

        /// Where Packet writes and object requests go (`current_object` in the SDK); `nil` after
        /// an invalid object type (`NRF_DFU_OBJ_TYPE_INVALID`).
        var currentObject: DFUObjectType? = .command
        var prnTarget: UInt16 = 0
        var prnCountdown: UInt16 = 0
        var pool: ReceiveBufferPool
        var resetting = false
        /// The erase the last Create queued failed: the object's packets cannot be stored.
        var eraseFailed = false

        /// When the inactivity timer was last restarted (with a clock).
        var lastActivity: Duration?
        /// When the current connection started; `nil` while disconnected.
        var connectedAt: Duration?

        init(configuration: Configuration, clocked: Bool, bootTime: Duration?) {
            settings = BootloaderSettings(
                applicationVersion: configuration.installedApplicationVersion,
                bootloaderVersion: configuration.installedBootloaderVersion
            )
            pool = ReceiveBufferPool(configuration: configuration, clocked: clocked)
            lastActivity = bootTime
        }

        /// `dfu_progress_reset()`: the init packet and all progress.
        mutating func resetProgress() {
            commandSize = 0
            command = []
            commandCRC = CRC32()
            offset = 0
            crc = CRC32()
            executedOffset = 0
            executedCRC = 0
            objectSize = nil
        }
    }

    private struct Shared {
        var run: Run
        var counters = Counters()
        /// The flash last seen: it outlives resets, and inspection reads the settings from it.
        var flash: (any FlashStorage)?
        /// Progress restored by ``restore(runningState:)``, applied once the bootloader has read
        /// its settings page (at the first connection).
        var restored: RunningProgress?
    }

    /// What ``runningState`` keeps: the request handler's progress in RAM.
    private struct RunningProgress {
        var currentObject: DFUObjectType?
        var commandSize: Int
        var command: [UInt8]
        var offset: Int
        var crc: UInt32
        var executedOffset: Int
        var executedCRC: UInt32
        var objectSize: Int?
        var prnTarget: UInt16
    }

    /// What a write makes the device do once its lock is released.
    private struct Effect {
        var notifications: [Data] = []
        var reboot: Duration?
        /// Pages a Create queued for erasing: erased after the notifications leave.
        var erase: Range<Int>?
    }

    private func apply(_ effect: Effect, _ peripheral: any PeripheralContext) {
        for notification in effect.notifications {
            peripheral.notify(notification, on: DFUGATTProfile.controlPoint)
        }
        if let delay = effect.reboot { peripheral.reboot(after: delay) }
    }

    /// Configuration values made safe to compute with (and to report as u32).
    private var limits: (command: Int, data: Int, page: Int) {
        let u32 = Int(UInt32.max)
        return (
            min(max(0, configuration.maximumCommandObjectSize), 1 << 20),
            min(max(0, configuration.maximumDataObjectSize), u32),
            min(max(1, configuration.pageSize), 1 << 30)
        )
    }

    // MARK: - Boot

    private func prepare(_ shared: inout Shared, flash: any FlashStorage) {
        // Kept only when it is another flash: nearly always the same one, and storing it again
        // retains it and releases the old one at every packet.
        if shared.flash !== flash { shared.flash = flash }
        boot(&shared.run, flash: flash)
        if let progress = shared.restored {
            // Over what boot() read from the settings page: the init packet it accepted stays
            // accepted only while the command object restored is that packet.
            shared.restored = nil
            if progress.command != shared.run.command { shared.run.accepted = nil }
            shared.run.currentObject = progress.currentObject
            shared.run.commandSize = progress.commandSize
            shared.run.command = progress.command
            shared.run.commandCRC = CRC32()
            shared.run.commandCRC.update(Data(progress.command))
            shared.run.offset = progress.offset
            shared.run.crc = CRC32(continuingFrom: progress.crc)
            shared.run.executedOffset = progress.executedOffset
            shared.run.executedCRC = progress.executedCRC
            shared.run.objectSize = progress.objectSize
            shared.run.prnTarget = progress.prnTarget
            shared.run.prnCountdown = progress.prnTarget
            discardUnsoundProgress(&shared.run, flash: flash)
        }
    }

    /// Checks restored progress against the device before Select reports it (decision 0056): a
    /// state file is outside input, and a bootloader that trusted an offset past the image or a
    /// CRC the flash does not hold would have the central resume onto bytes that are not there.
    /// A command object larger than the bootloader takes is dropped; executed objects past the
    /// bank or the accepted init packet's image, or whose CRC the flash does not give, drop all
    /// data progress; an object in progress past its size, the bank or the image, or whose CRC
    /// the flash does not give, starts over from the last executed object.
    private func discardUnsoundProgress(_ run: inout Run, flash: any FlashStorage) {
        if run.commandSize > limits.command {
            run.commandSize = 0
            run.command = []
            run.commandCRC = CRC32()
            run.accepted = nil
        }
        let end = min(run.bankCapacity, flash.capacity, run.accepted?.firmwareSize ?? 0)
        guard run.executedOffset <= end, flash.crc32(of: 0..<run.executedOffset) == run.executedCRC else {
            run.offset = 0
            run.crc = CRC32()
            run.executedOffset = 0
            run.executedCRC = 0
            run.objectSize = nil
            return
        }
        let objectFits = run.objectSize.map { $0 <= limits.data && run.offset - run.executedOffset <= $0 } ?? (run.offset == run.executedOffset)
        guard objectFits, run.offset <= end, flash.crc32(of: 0..<run.offset) == run.crc.value else {
            run.offset = run.executedOffset
            run.crc = CRC32(continuingFrom: run.executedCRC)
            run.objectSize = nil
            return
        }
    }

    /// What the bootloader does at start: read the settings page, re-execute a stored init packet.
    private func boot(_ run: inout Run, flash: any FlashStorage) {
        guard !run.booted else { return }
        run.booted = true
        run.settingsRegion = BootloaderSettings.region(in: flash, initCapacity: limits.command)
        if let region = run.settingsRegion {
            run.bankCapacity = region.lowerBound / limits.page * limits.page
            if let stored = BootloaderSettings.read(from: flash, region: region) { run.settings = stored }
        }
        if let bytes = run.settings.initPacket, let accepted = InitPacketValidator.restore(bytes, configuration: configuration) {
            run.accepted = accepted
            run.command = [UInt8](bytes)
            run.commandSize = bytes.count
            run.commandCRC = CRC32()
            run.commandCRC.update(bytes)
        }
    }

    /// Applies a lapsed inactivity timeout (needs a clock). Returns `true` when the reset happened
    /// while this link was up: the caller must answer nothing and have the host drop the link.
    private func expireIfInactive(_ shared: inout Shared, linkUp: Bool) -> Bool {
        guard let clock, configuration.inactivityTimeout > .zero, let last = shared.run.lastActivity else { return false }
        let now = clock()
        let timeout = configuration.inactivityTimeout
        guard now - last >= timeout else { return false }
        let firstReset = last + timeout
        let periods = min(1_000_000, max(1, Int(((now - last) / timeout).rounded(.down))))
        let connectedAt = shared.run.connectedAt
        let duringConnection = linkUp && (connectedAt.map { $0 <= firstReset } ?? true)
        shared.counters.inactivityResets += 1
        shared.run = Run(configuration: configuration, clocked: true, bootTime: last + timeout * periods)
        if let flash = shared.flash { boot(&shared.run, flash: flash) }
        // A link that came up after the reset is still up; one that was up then is gone.
        if !duringConnection { shared.run.connectedAt = connectedAt }
        return duringConnection
    }

    /// Restarts the inactivity timer (DFU started, object received).
    private func restartInactivityTimer(_ run: inout Run) {
        if let clock { run.lastActivity = clock() }
    }

    // MARK: - Control Point

    private enum ParsedRequest {
        case request(DFURequest)
        case invalidObjectType(create: Bool)
        case malformed
        case unsupported
    }

    /// Decodes a request as the BLE transport does: known op codes need their parameters;
    /// trailing bytes are ignored.
    private static func parse(_ bytes: [UInt8]) -> ParsedRequest {
        guard let first = bytes.first, let op = DFUOpCode(rawValue: first), let length = op.requestLength else { return .unsupported }
        guard bytes.count >= length else { return .malformed }
        if op == .create || op == .select, DFUObjectType(rawValue: bytes[1]) == nil {
            return .invalidObjectType(create: op == .create)
        }
        guard let request = DFURequest(decoding: Data(bytes.prefix(length))) else { return .malformed }
        return .request(request)
    }

    private static func encode(
        _ op: UInt8,
        _ result: DFUResultCode,
        _ extendedError: DFUExtendedError? = nil,
        values: [UInt32] = []
    ) -> Data {
        DFUResponse(opCode: op, result: result, extendedError: extendedError, values: values).encoded
    }

    private static func answer(_ op: DFUOpCode, _ result: DFUResultCode, values: [UInt32] = []) -> Effect {
        Effect(notifications: [encode(op.rawValue, result, values: values)])
    }

    private func handleRequest(_ bytes: [UInt8], _ shared: inout Shared, flash: any FlashStorage) -> Effect {
        let op = bytes[0]
        switch Self.parse(bytes) {
        case .unsupported:
            return Effect(notifications: [Self.encode(op, .opCodeNotSupported)])
        case .malformed:
            return Effect(notifications: [Self.encode(op, .invalidParameter)])
        case .invalidObjectType(let create):
            if create { shared.run.prnCountdown = shared.run.prnTarget }
            shared.run.currentObject = nil
            return Effect(notifications: [Self.encode(op, .invalidObject)])
        case .request(let request):
            return handle(request, &shared, flash: flash)
        }
    }

    private func handle(_ request: DFURequest, _ shared: inout Shared, flash: any FlashStorage) -> Effect {
        switch request {
        case .select(let type):
            shared.run.currentObject = type
            let run = shared.run
            let values: [UInt32] =
                switch type {
                case .command: [UInt32(limits.command), UInt32(clamping: run.command.count), run.commandCRC.value]
                case .data: [UInt32(limits.data), UInt32(clamping: run.offset), run.crc.value]
                }
            return Self.answer(.select, .success, values: values)
        case .create(let type, let size):
            // The BLE transport restarts the PRN count on every Create (§5).
            shared.run.prnCountdown = shared.run.prnTarget
            shared.run.currentObject = type
            switch type {
            case .command: return Self.answer(.create, createCommand(size: Int(size), &shared.run))
            case .data:
                let (result, erase) = createData(size: Int(size), &shared.run)
                var effect = Self.answer(.create, result)
                effect.erase = erase
                return effect
            }
        case .setPRN(let interval):
            shared.run.prnTarget = interval
            shared.run.prnCountdown = interval
            return Self.answer(.setPRN, .success)
        case .calculateChecksum:
            guard let values = checksumValues(shared.run) else { return Self.answer(.calculateChecksum, .invalidObject) }
            return Self.answer(.calculateChecksum, .success, values: values)
        case .execute:
            switch shared.run.currentObject {
            case .command?: return executeCommand(&shared.run, flash: flash)
            case .data?: return executeData(&shared, flash: flash)
            case nil: return Self.answer(.execute, .invalidObject)
            }
        case .abort:
            // The SDK closes the transport and resets before the response can leave (§2).
            shared.run.resetting = true
            return Effect(reboot: max(.zero, configuration.resetDelay))
        }
    }

    /// Offset and CRC of the current object (Calculate Checksum, PRN); `nil` for an invalid one.
    private func checksumValues(_ run: Run) -> [UInt32]? {
        switch run.currentObject {
        case .command?: [UInt32(clamping: run.command.count), run.commandCRC.value]
        case .data?: [UInt32(clamping: run.offset), run.crc.value]
        case nil: nil
        }
    }

    // MARK: - Command object

    /// nrf_dfu_validation_init_cmd_create(): the size is checked, then everything starts over.
    private func createCommand(size: Int, _ run: inout Run) -> DFUResultCode {
        restartInactivityTimer(&run)  // NRF_DFU_EVT_DFU_STARTED comes before the checks.
        guard size > 0 else { return .invalidParameter }
        guard size <= limits.command else { return .insufficientResources }
        run.accepted = nil
        run.resetProgress()
        run.commandSize = size
        return .success
    }

    private func executeCommand(_ run: inout Run, flash: any FlashStorage) -> Effect {
        guard run.command.count == run.commandSize else { return Self.answer(.execute, .operationNotPermitted) }
        // Executing an accepted init packet again changes nothing (§7: "executing twice is harmless").
        guard run.accepted == nil else { return Self.answer(.execute, .success) }
        let validator = InitPacketValidator(
            configuration: configuration,
            applicationVersion: run.settings.applicationVersion,
            bootloaderVersion: run.settings.bootloaderVersion,
            bankCapacity: run.bankCapacity
        )
        switch validator.validate(Data(run.command)) {
        case .failure(let rejection):
            if rejection.resetsProgress { run.resetProgress() }
            return Effect(notifications: [Self.encode(DFUOpCode.execute.rawValue, rejection.result, rejection.extendedError)])
        case .success(let accepted):
            run.accepted = accepted
            // SDK 15.3 stores the settings, init packet included, once it is accepted.
            var settings = run.settings
            settings.initPacket = accepted.bytes
            guard let region = run.settingsRegion, (try? settings.write(to: flash, region: region)) != nil else {
                return Self.answer(.execute, .operationFailed)
            }
            run.settings = settings
            return Self.answer(.execute, .success)
        }
    }

    // MARK: - Data objects

    /// on_data_obj_create_request(): checks in the SDK's order, then rewind and queue the erase
    /// of the object's pages. The SDK answers once the erase is queued (`nrf_dfu_flash_erase()`
    /// with no callback; only a request fstorage cannot queue answers 0x05), so the pages to
    /// erase are returned and erased after the answer has left.
    private func createData(size: Int, _ run: inout Run) -> (DFUResultCode, Range<Int>?) {
        guard let accepted = run.accepted else { return (.operationNotPermitted, nil) }
        guard size > 0 else { return (.invalidParameter, nil) }
        let page = limits.page
        if size % page != 0 && run.executedOffset + size != accepted.firmwareSize { return (.invalidParameter, nil) }
        guard size <= limits.data else { return (.insufficientResources, nil) }
        guard run.executedOffset + size <= accepted.firmwareSize else { return (.operationNotPermitted, nil) }
        run.objectSize = size
        run.offset = run.executedOffset
        run.crc = CRC32(continuingFrom: run.executedCRC)
        run.eraseFailed = false
        let pages = size / page + (size % page == 0 ? 0 : 1)
        let end = min(run.executedOffset + pages * page, run.bankCapacity)
        // Pages outside the bank: fstorage refuses to queue the erase.
        guard run.executedOffset < end else { return (.invalidObject, nil) }
        return (.success, run.executedOffset..<end)
    }

    /// The erase a Create queued. Its time goes to the receive buffer pool (packets wait behind
    /// it) and to the host's flash; a failing erase (worn or protected flash) is not reported,
    /// as the SDK's has no callback: the object's packets are not stored, so the central sees
    /// the offset and CRC fall behind.
    private func erase(_ range: Range<Int>, _ run: inout Run, flash: any FlashStorage) {
        let pages = (range.count + limits.page - 1) / limits.page
        if (try? erasePreservingPrefix(range, flash: flash)) == nil { run.eraseFailed = true }
        run.pool.erase(pages: pages, hostNow: clock?())
    }

    /// Erases `range`; when a flash sector is larger than a page, the bytes of the sector before
    /// `range` (earlier objects) are written back.
    private func erasePreservingPrefix(_ range: Range<Int>, flash: any FlashStorage) throws(FlashError) {
        let sector = max(1, flash.sectorSize)
        let sectorStart = range.lowerBound / sector * sector
        let prefix = sectorStart < range.lowerBound ? flash.read(sectorStart..<range.lowerBound) : Data()
        try flash.erase(range)
        if !prefix.isEmpty { try flash.write(prefix, at: sectorStart) }
    }

    private func executeData(_ shared: inout Shared, flash: any FlashStorage) -> Effect {
        // Not created, incomplete, or already executed (SDK 15.x–17 in the field, §7): 0x08.
        guard let size = shared.run.objectSize, shared.run.offset - shared.run.executedOffset == size else {
            return Self.answer(.execute, .operationNotPermitted)
        }
        shared.run.executedOffset = shared.run.offset
        shared.run.executedCRC = shared.run.crc.value
        shared.run.objectSize = nil
        restartInactivityTimer(&shared.run)  // NRF_DFU_EVT_OBJECT_RECEIVED
        guard let accepted = shared.run.accepted, shared.run.offset == accepted.firmwareSize else {
            return Self.answer(.execute, .success)
        }
        return finishUpdate(accepted, &shared, flash: flash)
    }

    /// The whole image is in: postvalidate (hash), record the outcome, answer, reset.
    private func finishUpdate(_ accepted: AcceptedInitPacket, _ shared: inout Shared, flash: any FlashStorage) -> Effect {
        let size = accepted.firmwareSize
        // Hashed where it lies, as the bootloader does, without a copy of the image.
        let fits = size <= flash.capacity
        var sha = SHA256()
        var crc = CRC32()
        if fits {
            flash.forEachPiece(of: 0..<size) { piece in
                sha.update(piece)
                crc.update(piece)
            }
        }
        let digest = sha.finalize()
        let expected = accepted.command.hash.map { [UInt8]($0.bytes) }
        var settings = shared.run.settings
        let reply: Data
        if fits, expected == Array(digest.reversed()) {
            let command = accepted.command
            let type = command.type ?? .application
            let version = command.fwVersion ?? 0
            settings.installedImage = BootloaderSettings.InstalledImage(
                firmwareType: type,
                version: version,
                size: size,
                crc32: crc.value,
                sha256: digest
            )
            if !(configuration.isDebugBuild && command.isDebug == true) {
                if type == .application { settings.applicationVersion = version }
                if type.rawValue & InitPacket.FirmwareType.bootloader.rawValue != 0 { settings.bootloaderVersion = version }
            }
            shared.counters.updatesInstalled += 1
            reply = Self.encode(DFUOpCode.execute.rawValue, .success)
        } else {
            shared.counters.verificationFailures += 1
            reply = Self.encode(DFUOpCode.execute.rawValue, .extendedError, .verificationFailed)
        }
        // Either way the progress and the init packet go, the settings are written and the
        // device resets (NRF_DFU_EVT_DFU_COMPLETED).
        settings.initPacket = nil
        if let region = shared.run.settingsRegion { try? settings.write(to: flash, region: region) }
        shared.run.settings = settings
        shared.run.accepted = nil
        shared.run.resetProgress()
        shared.run.resetting = true
        return Effect(notifications: [reply], reboot: max(.zero, configuration.resetDelay))
    }

    // MARK: - Packet

    private func receivePacket(_ bytes: Data, _ shared: inout Shared, flash: any FlashStorage) -> Effect {
        shared.counters.packetsReceived += 1
        guard shared.run.pool.allocate(hostNow: clock?()) else {
            shared.counters.packetsDropped += 1  // No buffer: dropped without a word (§5).
            return Effect()
        }
        let result = store(bytes, &shared.run, flash: flash)
        if result != .success { shared.counters.packetsRefused += 1 }

        // ble_dfu_req_handler_callback(): count every processed write; answer the N-th.
        shared.run.prnCountdown &-= 1
        guard shared.run.prnTarget != 0, shared.run.prnCountdown == 0 else { return Effect() }
        shared.run.prnCountdown = shared.run.prnTarget
        shared.counters.receiptNotifications += 1
        shared.run.pool.synchronize(hostNow: clock?())
        let values = result == .success ? checksumValues(shared.run) ?? [] : []
        return Effect(notifications: [Self.encode(DFUOpCode.calculateChecksum.rawValue, result, values: values)])
    }

    /// Appends a Packet write to the current object; the result the SDK would give it. The
    /// write's bytes go to flash as they came (no copy per packet).
    private func store(_ bytes: Data, _ run: inout Run, flash: any FlashStorage) -> DFUResultCode {
        switch run.currentObject {
        case nil:
            return .invalidObject
        case .command?:
            // nrf_dfu_validation_init_cmd_append(): "init command larger than expected" → 0x03.
            guard run.command.count + bytes.count <= run.commandSize else { return .invalidParameter }
            run.command += bytes
            run.commandCRC.update(bytes)
            return .success
        case .data?:
            guard run.accepted != nil else { return .operationNotPermitted }
            // "Write request too long" → 0x03; the whole packet is discarded.
            guard let size = run.objectSize, run.offset - run.executedOffset + bytes.count <= size,
                run.offset + bytes.count <= run.bankCapacity
            else { return .invalidParameter }
            // The packet's bytes reached once, for the flash and the CRC.
            bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
                do {
                    if run.eraseFailed { throw FlashError("the object's pages were not erased") }
                    try flash.write(raw, at: run.offset)
                } catch {
                    // nrf_dfu_flash_store() failed: the SDK stops here so the central sees a CRC
                    // error.
                    return
                }
                run.pool.holdForFlashWrite(bytes: raw.count)
                run.crc.update(raw)
                run.offset += raw.count
            }
            return .success
        }
    }
}
