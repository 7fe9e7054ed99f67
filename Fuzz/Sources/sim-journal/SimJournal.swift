import Foundation
import FuzzSupport
import OTACore
import OTATransportSimulator

/// A simulated device's journal (`PROFILE.journal` of `ota update --sim-state DIR`, a campaign's
/// devices; decisions 0041, 0048), its flash file (decision 0081) and its count of received
/// bytes, as `SimulatedDeviceFiles` reads them: the file is the user's, left by a process that may have been killed.
///
/// Oracles beyond "does not crash": a count reads only from 8 bytes and writes back to them; a
/// journal's groups written again read back the same; the next group appended is read after
/// them, and cut anywhere (what a kill inside the append leaves) changes nothing; a replay keeps
/// the flash's size and puts each sector's last content in place; a compact flash file restores
/// from its sectors to the slot it reads as.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimJournal(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let value = attempt({ try SimulatedDeviceJournal.receivedCount(reading: data) }) {
        guard SimulatedDeviceJournal.receivedCount(value) == data else { fatalError("count \(value) read from \(Array(data)) writes back otherwise") }
    } else if data.count == 8, data[data.startIndex + 7] < 0x80 {
        fatalError("an 8-byte count within Int.max, \(Array(data)), is refused")
    }

    // The flash file (decision 0081): read as a slot of 16 sectors of 64 bytes, it is that slot
    // or refused; a slot it reads as is what the file's own sectors say over an erased slot.
    if let slot = attempt({ try SimulatedDeviceJournal.slotImage(fromFlashFile: data, capacity: 1_024, sectorSize: 64) }) {
        guard slot.count == 1_024 else { fatalError("a flash file read as a \(slot.count)-byte slot, not 1024") }
        if data.count != 1_024 {
            guard let sectors = try? SimulatedDeviceJournal.groups(data), sectors.count == 1,
                (try? SimulatedDeviceJournal.replay(sectors, over: Data(repeating: 0xFF, count: 1_024), sectorSize: 64).image) == slot
            else { fatalError("a compact flash file read as a slot its sectors do not give") }
            // Restored from its sectors (what `ota` does, without making the slot), a flash
            // reads as that slot.
            guard case .sectors(let sectors)? = try? SimulatedDeviceJournal.flashContents(ofFlashFile: data, capacity: 1_024, sectorSize: 64)
            else { fatalError("a compact flash file read as a slot but not as sectors") }
            let flash = SimulatedFlash(capacity: 1_024, timing: FlashTiming(sectorSize: 64, sectorEraseTime: .zero, writeBytesPerSecond: 1_000))
            guard (try? flash.restore(sectors: sectors)) != nil, flash.snapshot() == slot else {
                fatalError("a flash restored from a compact file's sectors does not read as its slot")
            }
        }
    }

    guard let groups = attempt({ try SimulatedDeviceJournal.groups(data) }) else { return 0 }
    let clean = groups.reduce(into: Data()) { $0 += SimulatedDeviceJournal.group($1) }
    let again = (try? SimulatedDeviceJournal.groups(clean)) ?? [[SimulatedDeviceJournal.Entry(kind: .state, bytes: Data("refused".utf8))]]
    guard again == groups else { fatalError("\(groups.count) groups written again read back as \(again.count) groups") }

    // The next keep: the last group again, or a state made of the input.
    let next = groups.last.map { $0 } ?? [SimulatedDeviceJournal.Entry(kind: .state, bytes: data.prefix(16))]
    let appended = SimulatedDeviceJournal.group(next)
    guard (try? SimulatedDeviceJournal.groups(clean + appended)) == groups + [next] else {
        fatalError("a group appended to \(groups.count) groups does not read after them")
    }
    for cut in stride(from: 0, to: appended.count, by: max(1, appended.count / 8)) {
        guard (try? SimulatedDeviceJournal.groups(clean + appended.prefix(cut))) == groups else {
            fatalError("a group cut at byte \(cut) of \(appended.count) (a kill inside the append) changes the \(groups.count) groups before it")
        }
    }

    // Replayed over a flash of 16 sectors the size of the first sector entry (so that sectors
    // fit and are replayed, not refused at once).
    let entries = Array(groups.joined())
    let sectorSize = entries.first(where: { $0.kind == .sector }).map(\.bytes.count) ?? 64
    guard sectorSize > 0, sectorSize <= 4096 else { return 0 }
    let image = Data(repeating: 0xFF, count: sectorSize * 16)
    guard let replayed = attempt({ try SimulatedDeviceJournal.replay(groups, over: image, sectorSize: sectorSize) }) else { return 0 }
    guard replayed.image.count == image.count else { fatalError("a replay made a \(image.count)-byte flash \(replayed.image.count) bytes") }
    var last: [Int: Data] = [:]
    for entry in entries where entry.kind == .sector { last[entry.index] = entry.bytes }
    for (index, bytes) in last where replayed.image[(index * sectorSize)..<((index + 1) * sectorSize)] != bytes {
        fatalError("sector \(index) does not hold its last content after a replay")
    }
    guard replayed.state == entries.last(where: { $0.kind == .state })?.bytes,
        replayed.running == entries.last(where: { $0.kind == .running })?.bytes
    else { fatalError("a replay does not keep the last state and running state") }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzSimJournal) }
}
