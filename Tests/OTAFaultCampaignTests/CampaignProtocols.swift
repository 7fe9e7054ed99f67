import Foundation
import OTACore
import OTAProtocolFramed
import OTAProtocolGeneric
import OTAProtocolMCUmgr
import OTAProtocolNordicDFU
import OTATransportSimulator

/// A link a campaign run uses: a device profile (with a small slot, so 1,000 devices are cheap)
/// and the ATT MTU the central offers.
struct CampaignLink: Sendable, CustomStringConvertible {
    var profile: DeviceProfile
    var centralMTU: Int

    /// The MTU the link settles on.
    var attMTU: Int { max(23, min(centralMTU, profile.link.deviceMaximumMTU)) }

    var description: String { "\(profile.name) at MTU \(attMTU)" }

    /// `profile` with a 128 KiB update slot: the campaign's images are 2–40 KB.
    static func small(_ profile: DeviceProfile, mtu: Int = 517) -> CampaignLink {
        var profile = profile
        profile.slotSize = 128 << 10
        return CampaignLink(profile: profile, centralMTU: mtu)
    }
}

/// An error a protocol documents for a fault: its code, and a phrase its message contains.
struct DocumentedError: Sendable, CustomStringConvertible {
    var code: OTAError.Code
    var phrase: String

    init(_ code: OTAError.Code, _ phrase: String) {
        self.code = code
        self.phrase = phrase
    }

    func matches(_ error: OTAError) -> Bool {
        error.code == code && error.message.contains(phrase)
    }

    var description: String { "\(code) \"…\(phrase)…\"" }
}

/// What a protocol guarantees about bytes sent again.
enum ResendRule: Sendable {
    /// Not resumable: every lost link restarts from byte 0, bounded by the resume policy.
    case restartsFromZero
    /// At most one window of `batches` batches of at most `batch` chunks per link loss and per
    /// NAK or ACK timeout.
    case window(batches: Int, batch: Int)
    /// At most one data object of `size` bytes per link loss and per object the client sent
    /// again; a device reboot loses the bootloader's RAM progress and may restart from byte 0.
    case object(size: Int)
    /// MCUmgr's pipelined upload: at most `count` upload requests (the client's window, its
    /// `window` bounded by the device's `buf_count`) of at most `frame − 8` data bytes each per
    /// link loss and per re-synchronisation from the device's `off` after a damaged write, where
    /// `frame` is the device's `buf_size` rounded down to whole writes (the request size the
    /// client aims at). A device reboot loses the upload (Zephyr keeps it in RAM) and may restart
    /// from byte 0.
    case requests(count: Int, bufferSize: Int)
}

/// A protocol in the campaign: how to make its device and client, what its device installed,
/// the errors it documents per fault, and its resend guarantee.
///
/// Adding a protocol is one more entry in ``CampaignProtocol/all``.
struct CampaignProtocol: Sendable {
    /// The protocol's name, as in summaries and replay commands.
    var name: String
    /// Links to draw from.
    var links: [CampaignLink]
    /// Bytes each data write carries besides image bytes.
    var headerLength = 0
    /// Payload sizes are a multiple of this.
    var alignment = 1
    /// Bytes written without response before the image (Nordic's init packet).
    var prefixBytes = 0
    /// A fresh device model inside `simulation`.
    var makeModel: @Sendable (Simulation) -> any DeviceModel
    /// The client.
    var makeClient: @Sendable () -> any UpdateProtocol
    /// The image as the client takes it (with its attachments).
    var prepare: @Sendable (FirmwareImage) throws -> FirmwareImage = { $0 }
    /// Whether the device recorded an image as installed (committed); the campaign then checks
    /// the slot holds exactly the image's bytes.
    var installed: @Sendable (any DeviceModel) -> Bool
    /// The installed image's bytes, for a device that does not run it from the simulator's flash
    /// (MCUboot swaps it into slot 0); `nil`: the flash's first image-size bytes.
    var installedBytes: (@Sendable (any DeviceModel) -> Data)? = nil
    /// The errors the protocol documents when `fault` struck in `plan`'s run, alongside every
    /// fault in `fired`.
    var documentedErrors: @Sendable (_ fault: PlannedFault, _ plan: FaultPlan, _ fired: [PlannedFault]) -> [DocumentedError]
    /// Its resend guarantee.
    var resend: ResendRule
    /// Whether a damaged write (dropped, duplicated, corrupted or reordered) may cost a
    /// reconnection: SMP's reassembly goes by each frame's header length, so a frame missing a
    /// write or holding one twice takes bytes of the next and the device never answers it; only
    /// a new link resets the reassembly.
    var damagedWritesMayReconnect = false

    /// The payload of one data write on `link`.
    func payloadSize(on link: CampaignLink) -> Int {
        let payload = link.attMTU - 3 - headerLength
        return payload - payload % alignment
    }

    /// Every protocol the campaign covers.
    static let all: [CampaignProtocol] = [generic, framed, nordic, nordicPipelined, mcumgr, mcumgrTest]

    // MARK: - Generic

    /// Not resumable: a lost link (or bytes lost on it, COMMIT answering `02`) restarts from byte
    /// 0; a corrupted or reordered write fails COMMIT with `01`; a stall is not restarted; a
    /// flash failure fails COMMIT with `FF` (docs/protocols/generic.md).
    static let generic = CampaignProtocol(
        name: "generic",
        links: [.small(.esp32MTU23), .small(.esp32MTU185), .small(.esp32S3MTU244TwoM), .small(.esp32S3MTU244TwoM, mtu: 101)],
        makeModel: { _ in GenericDeviceModel() },
        makeClient: { GenericClient() },
        installed: { ($0 as? GenericDeviceModel)?.installedImage != nil },
        documentedErrors: { fault, _, fired in
            switch fault.kind {
            case .corruptWrite, .reorderWrite:
                [DocumentedError(.verificationFailed, "device rejected COMMIT: status 0x01, CRC mismatch; the image arrived corrupted, run the update again")]
            case .stall:
                [
                    DocumentedError(.stalled, "the device stopped taking data"),
                    // Stalled after the last byte: COMMIT waits behind the packets.
                    DocumentedError(.timeout, "waiting for the device to acknowledge COMMIT"),
                ]
            case .flashFailure:
                [DocumentedError(.deviceRejected, "device rejected COMMIT: status 0xFF, flash error")]
            case .dropWrite, .duplicateWrite:
                // Each alone makes COMMIT answer 02, a lost link: the update restarts from byte 0.
                // A lost write and a doubled one in the same run leave the count right and the
                // bytes wrong.
                Set(fired.map(\.kind)).isSuperset(of: [.dropWrite, .duplicateWrite])
                    ? [
                        DocumentedError(
                            .verificationFailed, "device rejected COMMIT: status 0x01, CRC mismatch; the image arrived corrupted, run the update again")
                    ]
                    : []
            case .disconnect, .reboot, .dyingLink:
                // Each restarts from byte 0; with at most 3 faults and 5 attempts none gives up.
                []
            }
        },
        resend: .restartsFromZero
    )

    // MARK: - Framed

    /// Resumable with per-batch ACKs: every fault but a failing flash is recovered from; a flash
    /// failure is NAK 3 (or BEGIN/COMMIT status 03), fatal (docs/protocols/framed.md).
    static let framed = CampaignProtocol(
        name: "framed",
        links: [.small(.esp32MTU23), .small(.esp32MTU185), .small(.esp32S3MTU244OneM), .small(.nrf52840, mtu: 100)],
        headerLength: FramedChunk.compactHeaderLength,  // version 2; batch ends carry 4 bytes more
        makeModel: { _ in FramedDeviceModel() },
        makeClient: { FramedClient() },
        installed: { ($0 as? FramedDeviceModel)?.sessionState == .installed },
        documentedErrors: { fault, _, _ in
            switch fault.kind {
            case .flashFailure:
                [
                    DocumentedError(.deviceRejected, "device reported a flash write failure at byte"),
                    DocumentedError(.deviceRejected, "device rejected BEGIN: status 0x03, flash error"),
                    DocumentedError(.deviceRejected, "device rejected COMMIT: status 0x03, flash error"),
                ]
            default: []
            }
        },
        resend: .window(batches: FramedConfiguration().windowBatches, batch: FramedDeviceModel.maximumBatch)
    )

    // MARK: - Nordic DFU

    /// The init packet every Nordic run sends before its image (its length is fixed by the
    /// builder for images of the campaign's sizes).
    static let nordicInitPacketLength = InitPacketBuilder.unsignedApplication(for: Data(count: 40_000)).count

    /// Resumable per 4 KiB object from the bootloader's RAM progress, which a reboot loses (the
    /// executed init packet is kept in flash): after a reboot the image starts over from byte 0.
    /// Damaged writes cost the object (or init packet) they fell in; a failing flash makes Create
    /// answer `0x05`, or the objects fail their checksum on a link that stays up
    /// (docs/protocols/nordic-dfu.md).
    static let nordic = CampaignProtocol(
        name: "nordic-dfu",
        links: [.small(.nrf52840), .small(.nrf52840, mtu: 23), .small(.nrf52840, mtu: 131)],
        alignment: 4,
        prefixBytes: nordicInitPacketLength,
        makeModel: { simulation in NordicBootloaderModel(clock: { simulation.now }) },
        makeClient: { NordicDFUClient() },
        prepare: { raw in
            let initPacket = InitPacketBuilder.unsignedApplication(for: raw.bytes)
            return try FirmwareImage(bytes: raw.bytes, name: raw.name, attachments: [NordicDFUClient.initPacketKey: initPacket])
        },
        installed: { ($0 as? NordicBootloaderModel)?.installedImage != nil },
        documentedErrors: { fault, _, fired in
            switch fault.kind {
            case .flashFailure:
                [
                    DocumentedError(.deviceRejected, "bootloader rejected Create data object of"),
                    DocumentedError(.deviceRejected, "bootloader rejected the init packet: Execute failed"),
                    DocumentedError(.verificationFailed, "failed its checksum 3 times on a link that stayed up"),
                ]
            case .dropWrite, .duplicateWrite, .corruptWrite, .reorderWrite:
                // A damaged write costs the object (or the init packet) it fell in, sent again.
                // Damage to every attempt at one (3, `object-attempts`) fails it as on a link
                // that keeps losing packets. A reordered write can damage two attempts: the
                // write it holds back arrives after the next one, which can be the next
                // attempt's first.
                fired.map { $0.kind == .reorderWrite ? 2 : ($0.kind.isIndexed ? 1 : 0) }.reduce(0, +) >= NordicDFUConfiguration().objectAttempts
                    ? [
                        DocumentedError(.verificationFailed, "failed its checksum 3 times on a link that stayed up"),
                        DocumentedError(.verificationFailed, "the bootloader received the init packet wrong 3 times on a link that stayed up"),
                    ] : []
            default: []
            }
        },
        resend: .object(size: NordicBootloaderModel.Configuration().maximumDataObjectSize)
    )

    /// `pipeline=on prn=auto` (decision 0024): the same guarantees, and one more documented
    /// failure: a write corrupted at the right size is only seen in the receipt, after the
    /// queued Execute took the object, so the update fails rather than go on.
    static let nordicPipelined = CampaignProtocol(
        name: "nordic-dfu-pipelined",
        links: nordic.links,
        alignment: 4,
        prefixBytes: nordicInitPacketLength,
        makeModel: nordic.makeModel,
        makeClient: {
            var configuration = NordicDFUConfiguration()
            configuration.pipelinesObjects = true
            configuration.adaptsReceiptInterval = true
            return NordicDFUClient(configuration: configuration)
        },
        prepare: nordic.prepare,
        installed: nordic.installed,
        documentedErrors: { fault, plan, fired in
            var errors = nordic.documentedErrors(fault, plan, fired)
            if fault.kind == .corruptWrite { errors.append(DocumentedError(.verificationFailed, "although it reports")) }
            return errors
        },
        resend: nordic.resend
    )

    // MARK: - MCUmgr

    /// The simulated Zephyr device's buffers (`sim:zephyr-sensor`'s defaults).
    static let mcumgrDevice = MCUmgrDeviceModel.Settings()

    /// MCUmgr image upload (`mode=upload`): resumable from the device's `off`, which Zephyr keeps
    /// in RAM across a disconnect and loses in a reboot (docs/protocols/mcumgr.md).
    static let mcumgr = CampaignProtocol(
        name: "mcumgr",
        links: [.small(.nrf52840), .small(.nrf52840, mtu: 23), .small(.nrf52840, mtu: 131)],
        makeModel: { _ in MCUmgrDeviceModel(settings: mcumgrDevice) },
        makeClient: {
            var configuration = MCUmgrConfiguration()
            configuration.mode = .upload
            return MCUmgrClient(configuration: configuration)
        },
        prepare: { raw in
            try FirmwareImage(
                bytes: MCUbootImageWriter.unsigned(body: raw.bytes, version: MCUbootVersion(major: 2, minor: 0, revision: 0)), name: raw.name)
        },
        installed: { ($0 as? MCUmgrDeviceModel)?.imageState.slot(1) != nil },
        documentedErrors: { fault, _, _ in
            switch fault.kind {
            case .flashFailure:
                [
                    DocumentedError(.deviceRejected, "image management rc 12 (flash write failed)"),
                    DocumentedError(.deviceRejected, "image management rc 13 (flash erase failed)"),
                ]
            // SMP carries no checksum per request: a damaged write that leaves a request's CBOR
            // valid stores other bytes, found by the device's SHA-256 check of the whole file
            // (`match`) on the last response, which starts the upload over from byte 0 (at most
            // 5 times in a row, the engine's bound; no plan has that many damaged writes). So a
            // damaged write documents no error: such runs must complete.
            default: []
            }
        },
        resend: .requests(count: min(MCUmgrConfiguration().window, mcumgrDevice.bufferCount), bufferSize: mcumgrDevice.bufferSize),
        damagedWritesMayReconnect: true
    )

    /// `mode=test`: the upload as above, then the image marked for a test boot, a reset (the
    /// engine reconnects), the image checked in slot 0 and confirmed. Installed means slot 0 runs
    /// it confirmed.
    static let mcumgrTest = CampaignProtocol(
        name: "mcumgr-test",
        links: mcumgr.links,
        makeModel: mcumgr.makeModel,
        makeClient: {
            var configuration = MCUmgrConfiguration()
            configuration.mode = .test
            return MCUmgrClient(configuration: configuration)
        },
        prepare: mcumgr.prepare,
        installed: { model in
            guard let model = model as? MCUmgrDeviceModel else { return false }
            return model.swapCount > 0 && !model.isTestBoot && model.primaryImage != MCUmgrDeviceModel.defaultFactoryImage
        },
        installedBytes: { ($0 as? MCUmgrDeviceModel)?.primaryImage ?? Data() },
        documentedErrors: mcumgr.documentedErrors,
        resend: mcumgr.resend,
        damagedWritesMayReconnect: true
    )
}
