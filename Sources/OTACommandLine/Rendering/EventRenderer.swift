import OTACore

/// Shows update events to a person or a program.
protocol EventRenderer: Sendable {
    /// Shows one event.
    mutating func render(_ event: UpdateEvent)
    /// Called once after the last event, before the result line.
    mutating func finish()
}

/// Shared wording for renderers.
enum Wording {
    /// "123.4 kB" style, decimal units as BLE throughput figures are quoted.
    static func bytes(_ count: Int) -> String {
        if count < 1000 { return "\(count) B" }
        if count < 1_000_000 { return String(oneDecimal: Double(count) / 1000) + " kB" }
        return String(oneDecimal: Double(count) / 1_000_000) + " MB"
    }

    /// "65.1 kB/s".
    static func rate(_ bytesPerSecond: Double) -> String {
        String(oneDecimal: bytesPerSecond / 1000) + " kB/s"
    }

    static func state(_ state: UpdateState, detail: String?) -> String {
        let text: String =
            switch state {
            case .connecting: "connecting"
            case .negotiating: "negotiating"
            case .transferring: "transferring"
            case .verifying: "verifying"
            case .committing: "committing"
            case .completed: "completed"
            case .paused: "paused"
            case .failed: "failed"
            }
        return detail.map { "\(text): \($0)" } ?? text
    }

    /// The detail a person sees with a state: none for `failed`, whose reason the command prints
    /// once as its `ota: error:` line (the JSON state event and result carry it too).
    static func shownDetail(_ state: UpdateState, _ detail: String?) -> String? {
        state == .failed ? nil : detail
    }

    static func link(_ link: LinkParameters, chunkSize: Int) -> String {
        "link up: \(link); \(chunkSize)-byte chunks"
    }

    static func progress(_ progress: UpdateProgress) -> String {
        let percent = Int(progress.fraction * 100)
        let done = max(progress.position, progress.bytesAcknowledged)
        var text = "\(percent)%  \(bytes(done)) / \(bytes(progress.totalBytes))  now \(rate(progress.currentRate))"
        if progress.bytesSent > done { text += "  (\(bytes(progress.bytesSent - done)) re-sent)" }
        if let eta = progress.estimatedTimeRemaining, done < progress.totalBytes {
            text += "  ETA \(eta.humanReadable)"
        }
        return text
    }
}
