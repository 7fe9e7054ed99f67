import Foundation
import OTACore
import Synchronization

/// The device side of MCUmgr image management: an SMP server over GATT with MCUboot's slot
/// semantics, as Zephyr's `img_mgmt` and `os_mgmt` behave.
///
/// - Slot 0 runs a confirmed factory image; uploads go into slot 1, which is the host's flash
///   (``PeripheralContext/flash``, with its erase and program timing). Slot 0 and MCUboot's
///   trailer flags are the model's own non-volatile state: they survive reboots.
/// - Requests may be split over several ATT writes (Zephyr's Bluetooth reassembly) and several may
///   arrive in one; each is handled in order, and its response is sent as notifications no longer
///   than the longest write the central sent (its ATT MTU − 3).
/// - Upload: offset 0 with `len` starts a session (erasing the slot up front or as writes reach it,
///   ``Settings/EraseMode``); offset 0 with the `sha` of the session in progress answers its
///   offset (resume); any other wrong offset is answered with the expected one. The upload
///   session lives in RAM: a disconnect keeps it, a reboot loses it.
/// - Test marks slot 1 for one boot; a reset swaps it in unconfirmed; the next reset reverts it
///   unless it was confirmed. Confirm of slot 1 swaps it in for good. Erasing or uploading into
///   a slot that is pending or holds the revert image fails with `NO_FREE_SLOT` (9); confirming
///   while a test is pending fails with `IMAGE_ALREADY_PENDING` (28).
public final class MCUmgrDeviceModel: PersistentDeviceModel, RunningDeviceModel {
    /// What the device is like.
    public struct Settings: Sendable, Hashable {
        /// How slot 1 is erased for an upload.
        public enum EraseMode: Sendable, Hashable {
            /// Every sector the image needs, before answering the first request (Zephyr's default).
            case wholeImageFirst
            /// Each sector when a write first reaches it (`CONFIG_IMG_ERASE_PROGRESSIVELY`).
            case progressive
        }

        /// `buf_size`: the largest SMP frame, header included, it takes.
        public var bufferSize: Int
        /// `buf_count`.
        public var bufferCount: Int
        /// What the transport's framing takes of each buffer besides the SMP frame
        /// (``SMPSerialFraming/bufferOverhead`` when served on a serial line, as Zephyr's serial
        /// transport; 0 over GATT and UDP). A frame that does not fit is dropped without an answer.
        public var framingOverhead = 0
        /// Whether it answers the MCUmgr parameters command (older servers answer `rc` 8).
        public var answersParameters = true
        /// How slot 1 is erased.
        public var eraseMode = EraseMode.progressive
        /// Whether the last upload response carries `match`, the SHA-256 of what slot 1 holds
        /// checked against the first request's `sha` (`CONFIG_IMG_ENABLE_IMAGE_CHECK`); without
        /// it, damaged bytes show only in the image state (slot 1 lists no valid image).
        public var checksImage = true
        /// From an os reset request to the restart.
        public var resetDelay: Duration = .milliseconds(250)
        /// The image slot 0 holds when the device is made.
        public var factoryImage: Data
        /// The public key MCUboot is built with (`CONFIG_BOOT_SIGNATURE_KEY_FILE`). When set,
        /// MCUboot validates the image in slot 1 before swapping it in, as `boot_validate_slot()`
        /// does: its signature must verify with this key (and its key hash name it), else the
        /// slot is erased and the device boots what it ran. `nil` (default): images are swapped
        /// in unchecked. `img_mgmt` itself checks no signature, so upload, test and confirm
        /// succeed either way; the refusal shows after the reset.
        public var bootKey: TrustedKey?

        /// Settings.
        public init(bufferSize: Int = 2475, bufferCount: Int = 4, factoryImage: Data = MCUmgrDeviceModel.defaultFactoryImage) {
            self.bufferSize = bufferSize
            self.bufferCount = bufferCount
            self.factoryImage = factoryImage
        }
    }

    /// A small confirmed image of version 1.0.0 that slot 0 runs when the device is made.
    public static var defaultFactoryImage: Data { Data(factoryImageBytes) }

    /// ``defaultFactoryImage``, made once. (An array, not `Data`: LeakSanitizer cannot follow a
    /// global `Data`'s storage and reports it as leaked, which failed every fuzz run making a
    /// model with the default settings; see OTATrust's `LibCrypto`.)
    private static let factoryImageBytes: [UInt8] = Array(
        MCUbootImageWriter.unsigned(
            body: Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), version: MCUbootVersion(major: 1, minor: 0, revision: 0)))

    private struct Upload {
        var length: Int
        var sha: Data?
        var offset = 0
        var erasedUpTo = 0
    }

    private enum Pending: Hashable {
        case test
        case permanent
    }

    private struct State {
        // Non-volatile: slot 0 and MCUboot's trailer flags.
        var primary: Data
        var pending: Pending?
        var primaryUnderTest = false
        var swaps = 0
        // RAM.
        var upload: Upload?
        var reassembler: SMPReassembler
        var fragmentLength = 20
        var busyAnswers = 0
        var failingHashes: Set<Data> = []
        var flash: (any FlashStorage)?
        var secondaryCache: MCUbootImage??
        var refusedImages = 0
        var corruptingWrites = false
    }

    /// The settings.
    public let settings: Settings
    /// The GATT layout.
    public let profile: MCUmgrGATTProfile
    private let state: Mutex<State>

    /// A device.
    public init(settings: Settings = Settings(), profile: MCUmgrGATTProfile = MCUmgrGATTProfile()) {
        self.settings = settings
        self.profile = profile
        state = Mutex(
            State(
                primary: settings.factoryImage,
                reassembler: SMPReassembler(maximumPayload: max(0, settings.bufferSize - SMPHeader.length - settings.framingOverhead))))
    }

    public var services: [GATTServiceDefinition] { [profile.serviceDefinition] }

    // MARK: - Inspection and faults, for tests

    /// The image slot 0 holds (the one running).
    public var primaryImage: Data { state.withLock { $0.primary } }

    /// Whether slot 0 runs a test boot that the next reset reverts.
    public var isTestBoot: Bool { state.withLock { $0.primaryUnderTest } }

    /// Times MCUboot swapped the slots.
    public var swapCount: Int { state.withLock { $0.swaps } }

    /// Times MCUboot found the image in slot 1 invalid for ``Settings/bootKey`` and erased it.
    public var refusedImageCount: Int { state.withLock { $0.refusedImages } }

    /// The next `count` upload requests after the first are answered `rc` 10 (busy).
    public func answerBusy(_ count: Int) { state.withLock { $0.busyAnswers = count } }

    /// A failing flash that reports success: from now on (until called with `false`) every
    /// upload request's data is stored with one bit flipped, which only the SHA-256 check of the
    /// finished upload (`match`) finds.
    public func corruptStoredData(_ corrupt: Bool = true) { state.withLock { $0.corruptingWrites = corrupt } }

    /// Images (by MCUboot hash) that crash when booted: MCUboot swaps them in, they reset at once,
    /// and MCUboot reverts them.
    public func failToBoot(hash: Data) { _ = state.withLock { $0.failingHashes.insert(hash) } }

    /// The version of the image slot 0 runs, as the image list reports it.
    public var runningVersion: ReportedVersion? {
        guard let running = imageState.slot(0) else { return nil }
        return ReportedVersion(text: running.version, source: "SMP image list, slot 0")
    }

    /// The image state the device reports now.
    public var imageState: ImageStateResponse { state.withLock { imageState(&$0) } }

    // MARK: - Non-volatile state

    /// (An array, not `Data`: LeakSanitizer cannot follow a global `Data`'s storage and reports
    /// it as leaked, which failed every fuzz run reaching it; see OTATrust's `LibCrypto`.)
    private static let stateMagic: [UInt8] = Array("MCUmgr-model-1\n".utf8)

    /// Slot 0 and MCUboot's flags (pending test or permanent, test boot, swaps), which a real
    /// device keeps in flash outside slot 1: what `--sim-state` keeps beside slot 1.
    public var persistentState: Data {
        state.withLock { state in
            var data = Data(Self.stateMagic)
            data.append(state.pending == .test ? 1 : state.pending == .permanent ? 2 : 0)
            data.append(state.primaryUnderTest ? 1 : 0)
            let swaps = UInt32(clamping: state.swaps)
            data.append(contentsOf: [UInt8(swaps >> 24), UInt8(swaps >> 16 & 0xFF), UInt8(swaps >> 8 & 0xFF), UInt8(swaps & 0xFF)])
            data.append(state.primary)
            return data
        }
    }

    /// Restores what ``persistentState`` saved.
    public func restore(persistentState data: Data) throws {
        let bytes = Array(data)
        let magic = Self.stateMagic
        guard bytes.count > magic.count + 6, Array(bytes[0..<magic.count]) == magic, bytes[magic.count] <= 2, bytes[magic.count + 1] <= 1 else {
            throw OTAError(.invalidParameter, "not a saved MCUmgr device state")
        }
        let flags = magic.count
        let swaps = bytes[(flags + 2)..<(flags + 6)].reduce(0) { $0 << 8 | Int($1) }
        let primary = Data(bytes[(flags + 6)...])
        state.withLock { state in
            state.pending = [nil, .test, .permanent][Int(bytes[flags])]
            state.primaryUnderTest = bytes[flags + 1] == 1
            state.swaps = swaps
            state.primary = primary
            state.secondaryCache = nil
        }
    }

    // MARK: - RAM that outlives the central

    /// (An array, not `Data`: LeakSanitizer cannot follow a global `Data`'s storage and reports
    /// it as leaked, which failed every fuzz run reaching it; see OTATrust's `LibCrypto`.)
    private static let runningMagic: [UInt8] = Array("MCUmgr-upload-1\n".utf8)

    /// The upload in progress (`img_mgmt`'s length, SHA-256, offset and erase point), which
    /// Zephyr keeps in RAM across a central's disconnect: empty when there is none.
    public var runningState: Data {
        state.withLock { state in
            guard let upload = state.upload else { return Data() }
            var writer = ByteWriter(capacity: Self.runningMagic.count + 13 + (upload.sha?.count ?? 0))
            writer.bytes(Self.runningMagic)
            for value in [upload.length, upload.offset, upload.erasedUpTo] { writer.u32(UInt32(clamping: value)) }
            writer.u8(UInt8(upload.sha?.count ?? 0))
            writer.bytes(upload.sha ?? Data())
            return writer.data
        }
    }

    /// Restores what ``runningState`` saved.
    public func restore(runningState data: Data) throws {
        guard !data.isEmpty else {
            state.withLock { $0.upload = nil }
            return
        }
        var reader = ByteReader(data)
        guard reader.bytes(Self.runningMagic.count).map([UInt8].init) == Self.runningMagic, let length = reader.u32(), let offset = reader.u32(),
            let erased = reader.u32(), let shaCount = reader.u8(), let sha = reader.bytes(Int(shaCount)), reader.remaining == 0,
            [length, offset, erased].allSatisfy({ $0 <= UInt32(Int32.max) }), offset <= length
        else {
            throw OTAError(.invalidParameter, "not a saved MCUmgr upload")
        }
        state.withLock { state in
            state.upload = Upload(length: Int(length), sha: sha.isEmpty ? nil : sha, offset: Int(offset), erasedUpTo: Int(erased))
            state.secondaryCache = nil
        }
    }

    // MARK: - DeviceModel

    public func connected(_ peripheral: any PeripheralContext) {
        state.withLock { state in
            state.flash = peripheral.flash
            state.fragmentLength = 20
            state.reassembler.reset()
        }
    }

    public func disconnected() {
        state.withLock { $0.reassembler.reset() }
    }

    public func rebooted() {
        state.withLock { state in
            state.upload = nil
            state.reassembler.reset()
            state.busyAnswers = 0
            boot(&state)
        }
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        guard characteristic == profile.smp else { return .writeNotPermitted }
        // Read once per write: each reading of the context's flash is a witness call and an
        // existential to retain and destroy; kept only when it is another flash (storing the
        // same one again retains it and releases the old).
        let flash = peripheral.flash
        let (responses, reset) = state.withLock { state -> ([Data], Bool) in
            if state.flash !== flash { state.flash = flash }
            state.fragmentLength = max(state.fragmentLength, value.count)
            let frames: [Data]
            do {
                frames = try state.reassembler.append(value)
            } catch {
                return ([], false)  // longer than the buffer: Zephyr drops it
            }
            var responses: [Data] = []
            var reset = false
            for frame in frames {
                guard let message = try? SMPMessage(decoding: frame) else { continue }
                let (response, resets) = handle(message, state: &state, flash: flash)
                responses.append(response)
                reset = reset || resets
            }
            let length = state.fragmentLength
            return (responses.flatMap { Self.fragments(of: $0, length: length) }, reset)
        }
        for fragment in responses { peripheral.notify(fragment, on: profile.smp) }
        if reset { peripheral.reboot(after: settings.resetDelay) }
        return .success
    }

    private static func fragments(of frame: Data, length: Int) -> [Data] {
        stride(from: 0, to: frame.count, by: length).map { frame[$0..<min($0 + length, frame.count)] }
    }

    // MARK: - Requests

    private enum Answer {
        case payload(CBOR)
        case error(SMPDeviceError)
    }

    private func handle(_ message: SMPMessage, state: inout State, flash: any FlashStorage) -> (Data, Bool) {
        let header = message.header
        let version = min(header.version, 1)
        var reset = false
        let answer: Answer
        do {
            let request = try MCUmgrRequest(decoding: message)
            switch request {
            case .echo(let text): answer = .payload(.textMap(["r": .text(text)]))
            case .reset:
                answer = .payload(.map([]))
                reset = true
            case .parameters:
                answer =
                    settings.answersParameters
                    ? .payload(MCUmgrParameters(bufferSize: settings.bufferSize, bufferCount: settings.bufferCount).payload)
                    : .error(.generic(.notSupported, reason: nil))
            case .readImageState: answer = .payload(imageState(&state).payload)
            case .setImageState(let hash, let confirm): answer = setState(hash: hash, confirm: confirm, state: &state)
            case .upload(let upload): answer = self.upload(upload, state: &state, flash: flash)
            case .erase(let slot): answer = erase(slot: slot, state: &state, flash: flash)
            }
        } catch {
            answer = .error(.generic(.notSupported, reason: nil))
        }
        let payload: CBOR
        switch answer {
        case .payload(let value): payload = value
        case .error(.group(_, let code)) where version == 0: payload = SMPDeviceError.generic(Self.legacy(code), reason: nil).payload
        case .error(let error): payload = error.payload
        }
        let response = SMPMessage(
            operation: header.operation.response, group: header.group, command: header.command, sequence: header.sequence, version: version,
            payload: payload)
        return (response.encoded, reset)
    }

    /// How SMP version 1 servers translate image management codes to generic ones.
    private static func legacy(_ code: Int) -> SMPReturnCode {
        switch ImageManagementCode(rawValue: code) {
        case .noFreeSlot, .imageAlreadyPending, ImageManagementCode(rawValue: 27): .badState
        case .invalidOffset, .invalidLength, .invalidHash, .hashNotFound: .invalidValue
        case .imageTooLarge: .messageTooLarge
        default: .unknown
        }
    }

    private func imageError(_ code: ImageManagementCode) -> Answer { .error(.group(SMPCommand.imageGroup, code: code.rawValue)) }

    // MARK: - Image state

    private func imageState(_ state: inout State) -> ImageStateResponse {
        var images: [ImageSlotState] = []
        if let primary = try? MCUbootImage(parsing: state.primary) {
            images.append(
                ImageSlotState(
                    slot: 0, version: primary.version.description, hash: primary.hash, bootable: true, confirmed: !state.primaryUnderTest, active: true
                ))
        }
        if let secondary = secondary(&state) {
            images.append(
                ImageSlotState(
                    slot: 1, version: secondary.version.description, hash: secondary.hash, bootable: true, pending: state.pending != nil,
                    confirmed: state.primaryUnderTest, permanent: state.pending == .permanent
                ))
        }
        return ImageStateResponse(images: images)
    }

    /// The image in slot 1, when it holds a whole valid one (not while an upload is under way).
    private func secondary(_ state: inout State) -> MCUbootImage? {
        if let cached = state.secondaryCache { return cached }
        var parsed: MCUbootImage?
        if let flash = state.flash, state.upload.map({ $0.offset == $0.length }) ?? true, let length = Self.imageLength(in: flash) {
            parsed = try? MCUbootImage(parsing: flash.read(0..<length))
        }
        state.secondaryCache = .some(parsed)
        return parsed
    }

    /// The length of the image whose header starts slot 1, from its header and TLV info.
    private static func imageLength(in flash: any FlashStorage) -> Int? {
        guard let header = try? MCUbootImageHeader(Array(flash.read(0..<MCUbootImageHeader.length))) else { return nil }
        let tlvStart = Int(header.headerSize) + Int(header.imageSize) + Int(header.protectedTLVSize)
        let info = Array(flash.read(tlvStart..<(tlvStart + 4)))
        guard info.count == 4, UInt16(info[0]) | UInt16(info[1]) << 8 == MCUbootTLV.areaMagic else { return nil }
        let length = tlvStart + Int(UInt16(info[2]) | UInt16(info[3]) << 8)
        return length <= flash.capacity ? length : nil
    }

    private func setState(hash: Data?, confirm: Bool, state: inout State) -> Answer {
        let primary = try? MCUbootImage(parsing: state.primary)
        let secondary = secondary(&state)
        if hash == nil || hash == primary?.hash {
            guard confirm else { return imageError(.testingActiveDenied) }
            state.primaryUnderTest = false
            return .payload(imageState(&state).payload)
        }
        guard let secondary, secondary.hash == hash else { return imageError(.hashNotFound) }
        guard !state.primaryUnderTest else { return imageError(.noFreeSlot) }
        switch (state.pending, confirm) {
        case (.test, true): return imageError(.imageAlreadyPending)
        case (.permanent, false): return imageError(.imageAlreadyPending)
        default: state.pending = confirm ? .permanent : .test
        }
        return .payload(imageState(&state).payload)
    }

    // MARK: - Upload and erase

    private func upload(_ request: ImageUploadRequest, state: inout State, flash: any FlashStorage) -> Answer {
        if request.offset == 0 {
            guard let length = request.length, length > 0 else { return .error(.generic(.invalidValue, reason: nil)) }
            if let upload = state.upload, upload.length == length, let sha = request.sha, sha.count == 32, upload.sha == sha, upload.offset > 0 {
                return .payload(ImageUploadResponse(offset: upload.offset).payload)
            }
            guard state.pending == nil, !state.primaryUnderTest else { return imageError(.noFreeSlot) }
            guard length <= flash.capacity else { return imageError(.imageTooLarge) }
            if state.upload == nil, let sha = request.sha, sha.count == 32, let secondary = secondary(&state), secondary.fileSHA256 == sha,
                Self.imageLength(in: flash) == length
            {
                return .payload(ImageUploadResponse(offset: length).payload)
            }
            var upload = Upload(length: length, sha: request.sha)
            state.secondaryCache = nil
            if settings.eraseMode == .wholeImageFirst {
                do {
                    try flash.erase(0..<length)
                } catch {
                    state.upload = nil
                    return imageError(.flashEraseFailed)
                }
                upload.erasedUpTo = (length + flash.sectorSize - 1) / flash.sectorSize * flash.sectorSize
            }
            state.upload = upload
        } else if state.busyAnswers > 0 {
            state.busyAnswers -= 1
            return .error(.generic(.busy, reason: nil))
        }
        guard var upload = state.upload else { return .payload(ImageUploadResponse(offset: 0).payload) }
        guard request.offset == upload.offset else { return .payload(ImageUploadResponse(offset: upload.offset).payload) }
        let end = upload.offset + request.data.count
        guard end <= upload.length else { return imageError(.invalidLength) }
        do {
            while upload.erasedUpTo < end {
                try flash.erase(upload.erasedUpTo..<(upload.erasedUpTo + flash.sectorSize))
                upload.erasedUpTo += flash.sectorSize
            }
            var stored = request.data
            if state.corruptingWrites, let first = stored.indices.first { stored[first] ^= 0x01 }
            try flash.write(stored, at: upload.offset)
        } catch {
            state.upload = nil
            state.secondaryCache = nil
            return imageError(.flashWriteFailed)
        }
        upload.offset = end
        state.upload = upload
        guard end == upload.length else { return .payload(ImageUploadResponse(offset: end).payload) }
        // Done: `img_mgmt` resets its upload state, so a later request at offset 0 starts over
        // (or, when slot 1 holds this file, is answered with its length) rather than resuming an
        // upload whose bytes may not match (campaign seed 1229).
        state.upload = nil
        state.secondaryCache = nil
        // `CONFIG_IMG_ENABLE_IMAGE_CHECK`: `flash_img_check()` hashes what the slot holds.
        let match = settings.checksImage ? upload.sha.map { Data(flash.sha256(of: 0..<upload.length)) == $0 } : nil
        return .payload(ImageUploadResponse(offset: end, match: match).payload)
    }

    private func erase(slot: Int?, state: inout State, flash: any FlashStorage) -> Answer {
        guard (slot ?? 1) == 1 else { return imageError(ImageManagementCode(rawValue: 14)) }
        guard state.pending == nil, !state.primaryUnderTest else { return imageError(.noFreeSlot) }
        let used = max(Self.imageLength(in: flash) ?? 0, state.upload?.offset ?? 0, 1)
        do {
            try flash.erase(0..<min(used, flash.capacity))
        } catch {
            return imageError(.flashEraseFailed)
        }
        state.upload = nil
        state.secondaryCache = nil
        return .payload(.map([]))
    }

    // MARK: - MCUboot

    /// What MCUboot does at a restart: revert an unconfirmed test boot, or swap in a pending
    /// image (and revert it at once when it fails to boot).
    private func boot(_ state: inout State) {
        if state.primaryUnderTest {
            swap(&state)
            state.primaryUnderTest = false
            return
        }
        guard let pending = state.pending else { return }
        state.pending = nil
        guard secondary(&state) != nil else { return }
        if let key = settings.bootKey, !validates(&state, with: key) {
            // "Image in the secondary slot is not valid!": erased, so it is not tried again.
            state.refusedImages += 1
            if let flash = state.flash, let length = Self.imageLength(in: flash) { try? flash.erase(0..<length) }
            state.secondaryCache = nil
            return
        }
        guard swap(&state) else { return }
        state.primaryUnderTest = pending == .test
        if let running = try? MCUbootImage(parsing: state.primary), state.failingHashes.contains(running.hash) {
            // The image resets before confirming itself: MCUboot reverts it on the next boot.
            swap(&state)
            state.primaryUnderTest = false
        }
    }

    /// Whether the image in slot 1 is signed by `key`, as `bootutil_img_validate()` checks it.
    private func validates(_ state: inout State, with key: TrustedKey) -> Bool {
        guard let flash = state.flash, let length = Self.imageLength(in: flash),
            let image = try? FirmwareImage(bytes: flash.read(0..<length), name: "slot 1")
        else { return false }
        return (try? MCUbootSignatureVerification().verify([image], trusting: [key])) != nil
    }

    /// Exchanges slot 0 and slot 1, through the flash (so the swap costs its erase and program time).
    @discardableResult
    private func swap(_ state: inout State) -> Bool {
        guard let flash = state.flash, let length = Self.imageLength(in: flash) else { return false }
        let incoming = flash.read(0..<length)
        let outgoing = state.primary
        do {
            try flash.erase(0..<max(length, outgoing.count))
            try flash.write(outgoing, at: 0)
        } catch {
            return false
        }
        state.primary = incoming
        state.secondaryCache = nil
        state.swaps += 1
        return true
    }
}
