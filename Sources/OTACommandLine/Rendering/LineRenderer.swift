import OTACore

/// Plain lines for logs and pipes: phase changes, and progress at every tenth of the image.
struct LineRenderer: EventRenderer {
    let streams: any OutputStreams
    private var lastDecile = -1

    init(streams: any OutputStreams) {
        self.streams = streams
    }

    mutating func render(_ event: UpdateEvent) {
        let time = "[\(String(oneDecimal: event.time.seconds))s]"
        switch event {
        case .state(let state, let detail, _):
            streams.err("\(time) \(Wording.state(state, detail: Wording.shownDetail(state, detail)))\n")
        case .linkEstablished(let link, let chunkSize, _):
            streams.err("\(time) \(Wording.link(link, chunkSize: chunkSize))\n")
        case .progress(let progress, _):
            let decile = Int(progress.fraction * 10)
            guard decile > lastDecile else { return }
            lastDecile = decile
            streams.err("\(time) \(Wording.progress(progress))\n")
        case .note(let text, _):
            streams.err("\(time) \(text)\n")
        }
    }

    mutating func finish() {}
}
