import Foundation
import FuzzSupport
import OTACore
import OTAProtocolMCUmgr
import OTAProtocolNordicDFU
import Synchronization

/// What a simulated device model keeps in the files of `ota update --sim-state DIR` (decisions
/// 0041, 0048), restored by the model when the next `ota` process starts: MCUmgr's slot 0 and
/// flags (`PROFILE.state`), its upload in progress (`PROFILE.running`), the Nordic bootloader's
/// progress (`PROFILE.running`). The files are the user's; the model then runs on what it read.
///
/// The input: which state (first byte, modulo 3), its length (u16 little-endian), the state,
/// then writes as the central sends them, each a byte choosing the characteristic (Nordic:
/// even the Control Point, odd the Packet), a length byte and the value.
///
/// Oracles: a state restored is written back byte for byte (``PersistentDeviceModel`` and
/// ``RunningDeviceModel`` say they restore what they saved; a state they would not write is
/// refused), except Nordic progress the flash does not hold, which is dropped to less that then
/// restores as itself; then the model answers the writes without trapping, whatever it restored.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimDeviceState(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var reader = ByteReader(fuzzInput(start, count))
    guard let kind = reader.u8(), let length = reader.u16() else { return 0 }
    let state = reader.bytes(min(Int(length), reader.remaining)) ?? Data()
    var writes: [(odd: Bool, value: Data)] = []
    while let choice = reader.u8(), let length = reader.u8() {
        writes.append((choice & 1 == 1, reader.bytes(min(Int(length), reader.remaining)) ?? Data()))
    }
    let peripheral = Peripheral()
    switch kind % 3 {
    case 0, 1:
        let model = MCUmgrDeviceModel()
        if kind % 3 == 0 {
            guard attempt({ try model.restore(persistentState: state) }) != nil else { return 0 }
            guard model.persistentState == state else { fatalError("an MCUmgr state restored writes back otherwise: \(Array(state))") }
        } else {
            guard attempt({ try model.restore(runningState: state) }) != nil else { return 0 }
            guard model.runningState == state else { fatalError("an MCUmgr upload restored writes back otherwise: \(Array(state))") }
        }
        model.connected(peripheral)
        for write in writes {
            consume(model.write(write.value, to: model.profile.smp, kind: .withoutResponse, peripheral: peripheral))
        }
        consume(model.imageState)
        consume(model.runningState)
        model.rebooted()
        model.connected(peripheral)
        consume(model.imageState)
    default:
        let model = NordicBootloaderModel()
        guard attempt({ try model.restore(runningState: state) }) != nil else { return 0 }
        // Applied over the settings page when the bootloader starts, at the first connection.
        model.connected(peripheral)
        let kept = model.runningState
        if kept != state && !(kept.isEmpty && nordicHoldsNothing(state)) {
            // The model checks restored progress against its flash (decision 0056) and drops what
            // the flash does not hold: then what it keeps holds no more data than the file said,
            // and is sound itself, so restoring it again keeps it byte for byte.
            guard let before = nordicOffsets(state), let after = nordicOffsets(kept) ?? (kept.isEmpty ? (0, 0) : nil),
                after.offset <= before.offset, after.executed <= before.executed
            else {
                fatalError("a Nordic bootloader's progress restored writes back otherwise: \(Array(state)) as \(Array(kept))")
            }
            let again = NordicBootloaderModel()
            guard attempt({ try again.restore(runningState: kept) }) != nil else {
                fatalError("a Nordic bootloader refuses the progress it wrote: \(Array(kept))")
            }
            again.connected(peripheral)
            guard again.runningState == kept else {
                fatalError("a Nordic bootloader's sound progress restored writes back otherwise: \(Array(kept)) as \(Array(again.runningState))")
            }
        }
        for write in writes {
            let characteristic = write.odd ? DFUGATTProfile.packet : DFUGATTProfile.controlPoint
            consume(model.write(write.value, to: characteristic, kind: write.odd ? .withoutResponse : .withResponse, peripheral: peripheral))
        }
        consume(model.runningState)
    }
    return 0
}

/// A Nordic progress's data offset and executed offset, `nil` when it is too short to hold them.
func nordicOffsets(_ state: Data) -> (offset: UInt32, executed: UInt32)? {
    var reader = ByteReader(state)
    _ = reader.bytes(Data("NordicDFU-progress-1\n".utf8).count)
    _ = reader.u8()
    _ = reader.u32()
    guard let offset = reader.u32(), reader.u32() != nil, let executed = reader.u32() else { return nil }
    return (offset, executed)
}

/// Whether a Nordic progress records nothing received (no command object size, no data offset):
/// what the model writes as no state at all.
func nordicHoldsNothing(_ state: Data) -> Bool {
    var reader = ByteReader(state)
    _ = reader.bytes(Data("NordicDFU-progress-1\n".utf8).count)
    _ = reader.u8()
    return reader.u32() == 0 && reader.u32() == 0
}

/// The host a model runs on: 64 KiB of NOR flash, notifications on, what it sends dropped.
final class Peripheral: PeripheralContext {
    let flash: any FlashStorage = NORFlash(capacity: 64 * 1024)
    private let notified = Mutex(0)

    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
    func notify(_ value: Data, on characteristic: CharacteristicID) { notified.withLock { $0 += value.count } }
    func reboot(after delay: Duration) {}
}

@main
enum Main {
    static func main() { runFuzzer(fuzzSimDeviceState) }
}
