import Foundation

/// The hours of the day a campaign may start attempts in: `22:00-05:00` UTC, or at an explicit
/// offset (`22:00-05:00+02:00`); a window that ends before it starts crosses midnight.
///
/// Read on the runner's wall clock (``CampaignLeaseClock``), so tests put "now" anywhere: outside
/// the window a run starts nothing; inside it, no attempt starts once it has closed (attempts in
/// flight finish).
public struct CampaignWindow: Sendable, Hashable, CustomStringConvertible {
    /// Where it opens, in minutes after midnight at ``offsetMinutes``.
    public var start: Int
    /// Where it closes, likewise; before ``start`` when it crosses midnight.
    public var end: Int
    /// Its offset from UTC in minutes (120 for +02:00).
    public var offsetMinutes: Int

    /// Creates a window; `start` and `end` are minutes after midnight (0..<1440) and differ.
    public init(start: Int, end: Int, offsetMinutes: Int = 0) throws(OTAError) {
        guard (0..<1440).contains(start), (0..<1440).contains(end), abs(offsetMinutes) <= 14 * 60 else {
            throw OTAError(.invalidParameter, "a window's times are 00:00 to 23:59, its offset at most 14 hours")
        }
        guard start != end else {
            throw OTAError(.invalidParameter, "a window that opens when it closes is empty; leave --window out to run at any time")
        }
        self.start = start
        self.end = end
        self.offsetMinutes = offsetMinutes
    }

    /// Reads `HH:MM-HH:MM`, optionally followed by `Z`, `UTC`, or an offset `+HH:MM` / `-HH:MM`
    /// (no suffix: UTC).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` with the form expected.
    public init(parsing text: String) throws(OTAError) {
        let form = "expected HH:MM-HH:MM in UTC, or with an offset such as 22:00-05:00+02:00"
        var body = Substring(text.trimmingCharacters(in: .whitespaces))
        var offset = 0
        if body.hasSuffix("UTC") {
            body = Substring(body.dropLast(3).trimmingCharacters(in: .whitespaces))
        } else if body.hasSuffix("Z") {
            body = body.dropLast()
        } else if body.count > 11, let sign = body.dropFirst(11).first, sign == "+" || sign == "-" {
            guard let minutes = Self.minutes(body.dropFirst(12), hours: 0...14) else {
                throw OTAError(.invalidParameter, "--window '\(MessageText.name(text))': \(form)")
            }
            offset = sign == "+" ? minutes : -minutes
            body = body.prefix(11)
        }
        let halves = body.split(separator: "-", omittingEmptySubsequences: false)
        guard halves.count == 2, let start = Self.minutes(halves[0], hours: 0...23), let end = Self.minutes(halves[1], hours: 0...23) else {
            throw OTAError(.invalidParameter, "--window '\(MessageText.name(text))': \(form)")
        }
        do {
            try self.init(start: start, end: end, offsetMinutes: offset)
        } catch {
            throw OTAError(.invalidParameter, "--window '\(MessageText.name(text))': \(error.message)")
        }
    }

    /// "HH:MM" → minutes, the hour within `hours`.
    private static func minutes(_ text: Substring, hours: ClosedRange<Int>) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), hours.contains(hour), minute < 60
        else { return nil }
        return hour * 60 + minute
    }

    /// "22:00-05:00 UTC", "22:00-05:00+02:00": the form ``init(parsing:)`` reads.
    public var description: String {
        let range = "\(Self.clock(start))-\(Self.clock(end))"
        guard offsetMinutes != 0 else { return range + " UTC" }
        return range + (offsetMinutes > 0 ? "+" : "-") + Self.clock(abs(offsetMinutes))
    }

    private static func clock(_ minutes: Int) -> String { String(format: "%02d:%02d", minutes / 60, minutes % 60) }

    /// Seconds since midnight at the window's offset.
    private func secondOfDay(_ date: Date) -> Double {
        let local = date.timeIntervalSince1970 + Double(offsetMinutes * 60)
        let day = 86_400.0
        return local - (local / day).rounded(.down) * day
    }

    /// Whether `date` is inside the window (it opens at ``start`` and is closed from ``end`` on).
    public func contains(_ date: Date) -> Bool {
        let now = secondOfDay(date)
        let opens = Double(start * 60)
        let closes = Double(end * 60)
        return start < end ? (now >= opens && now < closes) : (now >= opens || now < closes)
    }

    /// When the window next opens at or after `date` (`date` itself when it is open).
    public func opening(after date: Date) -> Date {
        guard !contains(date) else { return date }
        return date.addingTimeInterval(Self.ahead(Double(start * 60) - secondOfDay(date)))
    }

    /// When the window that is open at `date` closes; for a `date` outside it, when the next
    /// one closes.
    public func closing(after date: Date) -> Date {
        let open = opening(after: date)
        let ahead = Self.ahead(Double(end * 60) - secondOfDay(open))
        return open.addingTimeInterval(ahead == 0 ? 86_400 : ahead)
    }

    /// `seconds` brought into 0..<86400.
    private static func ahead(_ seconds: Double) -> Double {
        let day = 86_400.0
        return seconds - (seconds / day).rounded(.down) * day
    }

    /// `date` as the window reads it: "2026-12-02 22:00 UTC", or at its offset ("… 22:00+02:00").
    public func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: offsetMinutes * 60)
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        let suffix = offsetMinutes == 0 ? " UTC" : (offsetMinutes > 0 ? "+" : "-") + Self.clock(abs(offsetMinutes))
        return formatter.string(from: date) + suffix
    }
}
