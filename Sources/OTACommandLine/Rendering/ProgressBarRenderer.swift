import OTACore

/// A live progress bar on a terminal: phase changes as lines, bytes as one redrawn line.
struct ProgressBarRenderer: EventRenderer {
    let streams: any OutputStreams
    var width = 30
    private var barShown = false

    init(streams: any OutputStreams) {
        self.streams = streams
    }

    mutating func render(_ event: UpdateEvent) {
        switch event {
        case .state(let state, let detail, _):
            line("› " + Wording.state(state, detail: detail))
        case .linkEstablished(let link, let chunkSize, _):
            line("› " + Wording.link(link, chunkSize: chunkSize))
        case .progress(let progress, _):
            let filled = Int(progress.fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            streams.err("\r\u{1B}[2K[\(bar)] " + Wording.progress(progress))
            barShown = true
        case .device(let information, _):
            line("› device: \(information.summary)")
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
            streams.err("\n")
            barShown = false
        }
        streams.err(text + "\n")
    }
}
