import CFramedReferenceDevice
import Foundation
import OTACore
import Synchronization

/// The framed protocol's C reference device (`Examples/framed-reference-device/core`) hosted as a
/// ``DeviceModel``, so the simulator and the tests can run the firmware's own code.
///
/// The C core's RAM state (`framed_ota_device`) lives in a `Mutex`; every call into it happens
/// with the lock held. Its callbacks find this object through the platform's `context` pointer
/// (`Unmanaged`, unretained: the core only calls back from inside calls this object makes) and
/// forward flash work to the `FlashStorage` of the peripheral the current call came with,
/// notifications to its Control characteristic, and the post-COMMIT reboot to
/// ``PeripheralContext/reboot(after:)``.
///
/// Booting: the core reads its journal from flash at `framed_ota_init`, so it boots once it has
/// flash to read: at the first call that brings a peripheral (`connected(_:)`, a write or a read),
/// and again at every ``rebooted()`` on fresh RAM state (right away when the flash is already
/// known, as it is after the first connection).
final class FramedReferenceDevice: DeviceModel {
    /// Framed OTA service `4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001`.
    static let serviceUUID = GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// Data `4f544201-…`: chunks, written without response.
    static let dataUUID = GATTUUID("4f544201-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// Control `4f544202-…`: commands written with response; replies, ACKs and NAKs notified.
    static let controlUUID = GATTUUID("4f544202-8a2e-4c1b-9f3d-2b7e5c6a0001")!
    /// Status `4f544203-…`: read.
    static let statusUUID = GATTUUID("4f544203-8a2e-4c1b-9f3d-2b7e5c6a0001")!

    /// The Data characteristic.
    let dataCharacteristic = CharacteristicID(service: serviceUUID, characteristic: dataUUID)
    /// The Control characteristic.
    let controlCharacteristic = CharacteristicID(service: serviceUUID, characteristic: controlUUID)
    /// The Status characteristic.
    let statusCharacteristic = CharacteristicID(service: serviceUUID, characteristic: statusUUID)

    /// The C core's RAM state. It is only ever touched with `core`'s lock held.
    private struct Core {
        var device = framed_ota_device()
        var booted = false
    }

    /// Where the callbacks of the call in progress go. A separate lock from `core`: callbacks run
    /// while `core` is held and take this one only briefly (lock order: core, then host).
    private struct Host {
        /// The peripheral of the call in progress (or of the open connection). Weak: a simulated
        /// connection holds its device, which holds this model.
        weak var peripheral: (any PeripheralContext)?
        /// The device's flash: outlives connections, so a reboot can read the journal.
        var flash: (any FlashStorage)?
        /// ACKs and NAKs notified since the device was made.
        var acks = 0
        var naks = 0
    }

    private let core = Mutex(Core())
    private let host = Mutex(Host())

    /// Creates a device; it boots when it first meets its flash.
    init() {}

    var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: Self.serviceUUID,
                characteristics: [
                    .init(uuid: Self.dataUUID, properties: .writeWithoutResponse),
                    .init(uuid: Self.controlUUID, properties: [.write, .notify]),
                    .init(uuid: Self.statusUUID, properties: .read),
                ]
            )
        ]
    }

    /// ACKs and NAKs sent since the device was made (across reboots).
    var counters: (acks: Int, naks: Int) { host.withLock { ($0.acks, $0.naks) } }

    // MARK: - DeviceModel

    func connected(_ peripheral: any PeripheralContext) {
        // Boots the core if it has not met its flash yet; the peripheral stays current.
        withCore(peripheral) { _ in }
    }

    func disconnected() {
        withCore(nil) { core in
            if core.booted { framed_ota_disconnected(&core.device) }
        }
        host.withLock { $0.peripheral = nil }
    }

    func rebooted() {
        core.withLock { core in
            // RAM is lost; flash is kept. Boot now if the flash is known, else at the next contact.
            core = Core()
            host.withLock { $0.peripheral = nil }
            if let flash = host.withLock({ $0.flash }) { boot(&core, flash: flash) }
        }
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        switch characteristic {
        case dataCharacteristic:
            withCore(peripheral) { core in
                value.withUnsafeBytes { raw in
                    // Longer than any ATT value can be: not a chunk (drop it, as a BLE stack would).
                    guard let length = UInt16(exactly: raw.count) else { return }
                    framed_ota_data_write(&core.device, raw.bindMemory(to: UInt8.self).baseAddress, length)
                }
            }
            return .success
        case controlCharacteristic:
            return withCore(peripheral) { core in
                value.withUnsafeBytes { raw in
                    guard let length = UInt16(exactly: raw.count) else { return .invalidAttributeValueLength }
                    let status = framed_ota_control_write(&core.device, raw.bindMemory(to: UInt8.self).baseAddress, length)
                    return ATTStatus(rawValue: status)
                }
            }
        default:
            return .writeNotPermitted
        }
    }

    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        guard characteristic == statusCharacteristic else { return .failure(.readNotPermitted) }
        return withCore(peripheral) { core in
            var bytes = [UInt8](repeating: 0, count: Int(FRAMED_OTA_STATUS_LENGTH))
            let count = bytes.withUnsafeMutableBufferPointer { buffer in
                framed_ota_status_read(&core.device, buffer.baseAddress, UInt16(buffer.count))
            }
            return count == 0 ? .failure(.insufficientResources) : .success(Data(bytes[..<Int(count)]))
        }
    }

    // MARK: - Calling the core

    /// Runs `body` on the core with `peripheral` as the callbacks' target, booting first if needed.
    private func withCore<T: Sendable>(_ peripheral: (any PeripheralContext)?, _ body: (inout Core) -> T) -> T {
        core.withLock { (core: inout Core) -> T in
            let flash: (any FlashStorage)? = host.withLock { host in
                if let peripheral {
                    host.peripheral = peripheral
                    host.flash = peripheral.flash
                }
                return host.flash
            }
            if !core.booted, let flash { boot(&core, flash: flash) }
            return body(&core)
        }
    }

    /// `framed_ota_init` on fresh RAM state, with callbacks that lead back to this object.
    private func boot(_ core: inout Core, flash: any FlashStorage) {
        var platform = framed_ota_platform()
        platform.context = Unmanaged.passUnretained(self).toOpaque()
        platform.slot_size = UInt32(clamping: flash.capacity)
        platform.sector_size = UInt32(clamping: flash.sectorSize)
        platform.flash_erase = { context, offset, length in
            FramedReferenceDevice.from(context)?.eraseFlash(offset: offset, length: length) ?? -1
        }
        platform.flash_write = { context, offset, data, length in
            FramedReferenceDevice.from(context)?.writeFlash(offset: offset, data: data, length: length) ?? -1
        }
        platform.flash_read = { context, offset, data, length in
            FramedReferenceDevice.from(context)?.readFlash(offset: offset, into: data, length: length) ?? -1
        }
        platform.notify = { context, data, length in
            FramedReferenceDevice.from(context)?.notify(data: data, length: length)
        }
        platform.reboot = { context, delay in
            FramedReferenceDevice.from(context)?.reboot(afterMilliseconds: delay)
        }
        core.device = framed_ota_device()
        framed_ota_init(&core.device, &platform)
        core.booted = true
    }

    // MARK: - Callbacks (run inside a core call, with `core` locked)

    private static func from(_ context: UnsafeMutableRawPointer?) -> FramedReferenceDevice? {
        guard let context else { return nil }
        return Unmanaged<FramedReferenceDevice>.fromOpaque(context).takeUnretainedValue()
    }

    private var currentFlash: (any FlashStorage)? { host.withLock { $0.flash } }
    private var currentPeripheral: (any PeripheralContext)? { host.withLock { $0.peripheral } }

    /// The byte range `[offset, offset + length)` when it lies inside `flash`.
    private static func range(_ offset: UInt32, _ length: UInt32, in flash: any FlashStorage) -> Range<Int>? {
        let start = Int(offset)
        let end = start + Int(length)
        guard end <= flash.capacity else { return nil }
        return start..<end
    }

    private func eraseFlash(offset: UInt32, length: UInt32) -> Int32 {
        guard let flash = currentFlash, let range = Self.range(offset, length, in: flash) else { return -1 }
        do {
            try flash.erase(range)
            return 0
        } catch {
            return -1
        }
    }

    private func writeFlash(offset: UInt32, data: UnsafePointer<UInt8>?, length: UInt32) -> Int32 {
        guard let flash = currentFlash, let data, Self.range(offset, length, in: flash) != nil else { return -1 }
        do {
            try flash.write(Data(bytes: data, count: Int(length)), at: Int(offset))
            return 0
        } catch {
            return -1
        }
    }

    private func readFlash(offset: UInt32, into data: UnsafeMutablePointer<UInt8>?, length: UInt32) -> Int32 {
        guard let flash = currentFlash, let data, let range = Self.range(offset, length, in: flash) else { return -1 }
        let bytes = flash.read(range)
        guard bytes.count == Int(length) else { return -1 }
        bytes.copyBytes(to: data, count: Int(length))
        return 0
    }

    private func notify(data: UnsafePointer<UInt8>?, length: UInt16) {
        guard let data, length > 0 else { return }
        let value = Data(bytes: data, count: Int(length))
        let peripheral: (any PeripheralContext)? = host.withLock { host in
            switch value[value.startIndex] {
            case UInt8(FRAMED_OTA_OP_ACK): host.acks += 1
            case UInt8(FRAMED_OTA_OP_NAK): host.naks += 1
            default: break
            }
            return host.peripheral
        }
        peripheral?.notify(value, on: controlCharacteristic)
    }

    private func reboot(afterMilliseconds delay: UInt32) {
        currentPeripheral?.reboot(after: .milliseconds(Int64(delay)))
    }
}
