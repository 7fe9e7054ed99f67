import Foundation
import OTACore

/// One JSON object per line on standard output, for pipelines. The shapes are documented in
/// `docs/cli.md`; `time` is seconds since the update started on the engine's clock.
struct JSONRenderer: EventRenderer {
    let streams: any OutputStreams

    init(streams: any OutputStreams) {
        self.streams = streams
    }

    mutating func render(_ event: UpdateEvent) {
        var object: [String: JSONValue] = ["time": .number(event.time.seconds)]
        switch event {
        case .state(let state, let detail, _):
            object["event"] = .string("state")
            object["state"] = .string(state.rawValue)
            if let detail { object["detail"] = .string(detail) }
        case .linkEstablished(let link, let chunkSize, _):
            object["event"] = .string("link")
            object["attMTU"] = .number(Double(link.attMTU))
            object["maxWriteWithoutResponse"] = .number(Double(link.maximumWriteWithoutResponse))
            object["chunkSize"] = .number(Double(chunkSize))
            if let summary = link.summary { object["summary"] = .string(summary) }
        case .progress(let progress, _):
            object["event"] = .string("progress")
            object["bytesSent"] = .number(Double(progress.bytesSent))
            object["bytesAcknowledged"] = .number(Double(progress.bytesAcknowledged))
            object["totalBytes"] = .number(Double(progress.totalBytes))
            object["currentRate"] = .number(progress.currentRate.rounded())
            object["averageRate"] = .number(progress.averageRate.rounded())
            if let eta = progress.estimatedTimeRemaining { object["eta"] = .number(eta.seconds) }
        case .device(let information, _):
            object["event"] = .string("device")
            if let value = information.manufacturer { object["manufacturer"] = .string(value) }
            if let value = information.modelNumber { object["model"] = .string(value) }
            if let value = information.hardwareRevision { object["hardwareRevision"] = .string(value) }
            if let value = information.firmwareRevision { object["firmwareRevision"] = .string(value) }
            if let value = information.batteryLevel { object["battery"] = .number(Double(value)) }
            object["unread"] = .array(information.unread.map(JSONValue.string))
        case .note(let text, _):
            object["event"] = .string("note")
            object["text"] = .string(text)
        }
        emit(object)
    }

    mutating func finish() {}

    func emit(_ object: [String: JSONValue]) {
        streams.out(JSONValue.object(object).serialized + "\n")
    }
}
