import Foundation
import OTACore
import Synchronization

/// The device side of the generic protocol, behaving like the seed's ESP-IDF firmware.
///
/// - START (`esp_ota_begin`): resets the update and answers `0x81 0x00`, or `0x81 0xFF` when the
///   image cannot fit the slot or the flash fails.
/// - Data: appended in order; each sector is erased just before its first byte is written
///   (ESP-IDF's sequential-write mode), so the erase hides behind the transfer.
/// - COMMIT (`esp_ota_end`): `0x02` when the byte count differs from START's, `0x01` when the
///   CRC announced at COMMIT differs from START's or when the CRC of the bytes read back from
///   flash differs (the seed firmware leaves that check to `esp_ota_end`'s image validation),
///   `0xFF` on flash failure; otherwise `0x00`, then the device reboots into the new image.
/// - ABORT: forgets the update, no reply.
///
/// The behaviour can be bent for tests with ``Behavior``.
public final class GenericDeviceModel: DeviceModel {
    /// Deliberate misbehaviour, for tests.
    public struct Behavior: Sendable, Hashable {
        /// When `false`, the device takes commands but never replies (a hung firmware).
        public var replies = true
        /// Answer START with this status instead of deciding.
        public var startStatus: GenericStatus?
        /// Erase the whole image area at START, as `esp_ota_begin` does without sequential writes.
        public var eraseAtStart = false
        /// Delay between the COMMIT reply and the reboot into the new image.
        public var rebootDelay: Duration = .milliseconds(300)

        /// The firmware's normal behaviour.
        public init() {}
    }

    /// The image a successful COMMIT installed.
    public struct InstalledImage: Sendable, Hashable {
        /// Its size in bytes.
        public var size: Int
        /// Its CRC-32.
        public var crc32: UInt32
    }

    private struct State {
        var receiving = false
        var expectedSize = 0
        var expectedCRC: UInt32 = 0
        var received = 0
        var erasedUpTo = 0
        var flashFailure: String?
        var installed: InstalledImage?
        var ignoredWrites = 0
    }

    /// The GATT layout.
    public let profile: GenericGATTProfile
    private let state = Mutex(State())
    private let behaviorState: Mutex<Behavior>

    /// Creates a device.
    public init(profile: GenericGATTProfile = GenericGATTProfile(), behavior: Behavior = Behavior()) {
        self.profile = profile
        self.behaviorState = Mutex(behavior)
    }

    /// How the device behaves; change it between or during runs.
    public var behavior: Behavior {
        get { behaviorState.withLock { $0 } }
        set { behaviorState.withLock { $0 = newValue } }
    }

    /// The image the last successful COMMIT installed, if any.
    public var installedImage: InstalledImage? { state.withLock { $0.installed } }

    /// Bytes received since the last START.
    public var bytesReceived: Int { state.withLock { $0.received } }

    /// Data writes that arrived with no update in progress and were ignored.
    public var ignoredWrites: Int { state.withLock { $0.ignoredWrites } }

    public var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: profile.service,
                characteristics: [
                    .init(uuid: profile.dataCharacteristic, properties: .writeWithoutResponse),
                    .init(uuid: profile.controlCharacteristic, properties: [.write, .notify]),
                ]
            )
        ]
    }

    public func rebooted() {
        state.withLock { state in
            let installed = state.installed
            state = State()
            state.installed = installed
        }
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        switch characteristic {
        case profile.data:
            receiveData(value, flash: peripheral.flash)
            return .success
        case profile.control:
            guard let command = GenericCommand(decoding: value) else { return .invalidPDU }
            handle(command, peripheral: peripheral)
            return .success
        default:
            return .writeNotPermitted
        }
    }

    private func receiveData(_ value: Data, flash: any FlashStorage) {
        state.withLock { state in
            guard state.receiving else {
                state.ignoredWrites += 1
                return
            }
            let offset = state.received
            // Like esp_ota_write, count the bytes even when they cannot be stored.
            state.received += value.count
            guard state.flashFailure == nil else { return }
            let end = offset + value.count
            guard end <= flash.capacity else {
                state.flashFailure = "write past the end of the \(flash.capacity)-byte slot"
                return
            }
            do {
                while state.erasedUpTo < end {
                    try flash.erase(state.erasedUpTo..<(state.erasedUpTo + flash.sectorSize))
                    state.erasedUpTo += flash.sectorSize
                }
                try flash.write(value, at: offset)
            } catch {
                state.flashFailure = String(describing: error)
            }
        }
    }

    private func handle(_ command: GenericCommand, peripheral: any PeripheralContext) {
        let behavior = self.behavior
        let reply: GenericReply?
        switch command {
        case .start(let size, let crc):
            reply = .start(start(size: Int(size), crc: crc, behavior: behavior, flash: peripheral.flash))
        case .commit(let crc):
            let status = commit(crc: crc, flash: peripheral.flash)
            reply = .commit(status)
            if status == .ok { peripheral.reboot(after: behavior.rebootDelay) }
        case .abort:
            state.withLock { $0.receiving = false }
            reply = nil
        }
        if let reply, behavior.replies {
            peripheral.notify(reply.encoded, on: profile.control)
        }
    }

    private func start(size: Int, crc: UInt32, behavior: Behavior, flash: any FlashStorage) -> GenericStatus {
        state.withLock { state in
            state.receiving = false
            guard size > 0, size <= flash.capacity else { return .flashError }
            if let forced = behavior.startStatus, forced != .ok { return forced }
            state.expectedSize = size
            state.expectedCRC = crc
            state.received = 0
            state.erasedUpTo = 0
            state.flashFailure = nil
            if behavior.eraseAtStart {
                do {
                    try flash.erase(0..<size)
                    state.erasedUpTo = (size + flash.sectorSize - 1) / flash.sectorSize * flash.sectorSize
                } catch {
                    return .flashError
                }
            }
            state.receiving = true
            return .ok
        }
    }

    private func commit(crc: UInt32, flash: any FlashStorage) -> GenericStatus {
        state.withLock { state in
            guard state.receiving else { return .flashError }
            state.receiving = false
            guard state.received == state.expectedSize else { return .sizeMismatch }
            guard crc == state.expectedCRC else { return .crcMismatch }
            guard state.flashFailure == nil else { return .flashError }
            // Read back what flash holds, as esp_ota_end validates the written image.
            guard flash.crc32(of: 0..<state.expectedSize) == state.expectedCRC else { return .crcMismatch }
            state.installed = InstalledImage(size: state.expectedSize, crc32: state.expectedCRC)
            return .ok
        }
    }
}
