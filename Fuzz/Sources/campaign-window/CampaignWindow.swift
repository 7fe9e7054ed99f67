import Foundation
import FuzzSupport
import OTACore

/// `ota campaign create --window HH:MM-HH:MM[Z|UTC|±HH:MM]` (decision 0044), and the window
/// text a campaign file holds, read again at every `run` and `status`: `CampaignWindow(parsing:)`.
///
/// The input: a date (8 bytes, seconds since 1970 as a little-endian Int64 in tenths of a second,
/// kept within ±300 years), then the text.
///
/// Oracles: an accepted window opens and closes inside 0..<1440 minutes, not at the same minute,
/// at most 14 hours from UTC; its description (what the campaign file keeps) reads back as the
/// same window; at the date, `opening(after:)` is not before it, less than a day after, and
/// inside the window; `closing(after:)` comes after the opening, within a day, and outside the
/// window.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCampaignWindow(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    guard data.count >= 8 else { return 0 }
    var reader = ByteReader(data)
    let low = UInt64(reader.u32() ?? 0)
    let high = UInt64(reader.u32() ?? 0)
    let tenths = Int64(bitPattern: high << 32 | low) % (300 * 365 * 86_400 * 10)
    let date = Date(timeIntervalSince1970: Double(tenths) / 10)
    let text = String(decoding: data.dropFirst(8), as: UTF8.self)
    guard let window = attempt({ try CampaignWindow(parsing: text) }) else { return 0 }
    guard (0..<1440).contains(window.start), (0..<1440).contains(window.end), window.start != window.end,
        abs(window.offsetMinutes) <= 14 * 60
    else { fatalError("'\(text)' was accepted as \(window.start)-\(window.end) at \(window.offsetMinutes)") }
    guard let again = try? CampaignWindow(parsing: window.description), again == window else {
        fatalError("'\(text)' reads as \(window), which does not read back as itself")
    }
    let opens = window.opening(after: date)
    guard opens >= date, opens.timeIntervalSince(date) < 86_400, window.contains(opens) else {
        fatalError("\(window) at \(date.timeIntervalSince1970): opens at \(opens.timeIntervalSince1970), inside: \(window.contains(opens))")
    }
    let closes = window.closing(after: date)
    guard closes > opens, closes.timeIntervalSince(opens) <= 86_400, !window.contains(closes) else {
        fatalError("\(window) at \(date.timeIntervalSince1970): opens \(opens.timeIntervalSince1970), closes \(closes.timeIntervalSince1970)")
    }
    consume(window.format(opens).utf8.count)
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzCampaignWindow) }
}
