import OTACore

/// A live progress bar on a terminal: phase changes as lines, bytes as one redrawn line.
///
/// Only one bar is ever on screen: a line printed while it shows takes its place (the bar comes
/// back with the next progress), and once the transfer is over (verifying, completed, failed,
/// paused) progress is not drawn again.
struct ProgressBarRenderer: EventRenderer {
    let streams: any OutputStreams
    var width = 30
    private var barShown = false
    private var state: UpdateState?

    init(streams: any OutputStreams) {
        self.streams = streams
    }

    mutating func render(_ event: UpdateEvent) {
        switch event {
        case .state(let state, let detail, _):
            self.state = state
            line("› " + Wording.state(state, detail: Wording.shownDetail(state, detail)))
        case .linkEstablished(let link, let chunkSize, _):
            line("› " + Wording.link(link, chunkSize: chunkSize))
        case .progress(let progress, _):
            if let state, [.verifying, .committing, .completed, .failed, .paused].contains(state) { return }
            let filled = Int(progress.fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            streams.err("\r\u{1B}[2K[\(bar)] " + Wording.progress(progress))
            barShown = true
        case .note(let text, _):
            line("  \(text)")
        }
    }

    mutating func finish() {
        if barShown { streams.err("\n") }
        barShown = false
    }

    private mutating func line(_ text: String) {
        if barShown {
            streams.err("\r\u{1B}[2K")
            barShown = false
        }
        streams.err(text + "\n")
    }
}
