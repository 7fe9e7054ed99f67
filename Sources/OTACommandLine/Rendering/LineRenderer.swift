import OTACore

/// Plain lines for logs and pipes: phase changes, and progress at every tenth of the image; when
/// the position moves back (a restart from byte 0, a resume from an earlier offset, the next part
/// of a multi-part update) the tenths count again from there.
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
            if decile < lastDecile { lastDecile = decile - 1 }
            guard decile > lastDecile else { return }
            lastDecile = decile
            streams.err("\(time) \(Wording.progress(progress))\n")
        case .device(let information, _):
            streams.err("\(time) device: \(information.summary)\n")
        case .note(let text, _):
            streams.err("\(time) \(text)\n")
        }
    }

    mutating func finish() {}
}
