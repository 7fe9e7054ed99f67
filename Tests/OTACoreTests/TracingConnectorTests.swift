import Foundation
import OTACore
import Testing

@Suite struct TracingConnectorTests {
    struct Unreachable: Connector {
        var deviceDescription: String { "nowhere" }
        func connect() async throws(TransportError) -> any Transport {
            throw TransportError(.connectionFailed, "no device answered")
        }
    }

    @Test func aFailedConnectIsRecordedUnderItsSequenceNumber() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ota-tracing-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: url) }
        let header = TraceHeader(command: "ota update", device: "nowhere", protocolName: "generic", images: [], keepsData: false)
        let recorder = try TraceRecorder(url: url, header: header)
        let connector = TracingConnector(Unreachable(), recorder: recorder, executor: nil)
        let error = await #expect(throws: TransportError.self) { _ = try await connector.connect() }
        #expect(error?.kind == .connectionFailed)
        try recorder.finish()
        let trace = try Trace(contentsOf: url)
        #expect(trace.records.map(\.op) == [.connect, .failed])
        #expect(trace.records[1].seq == trace.records[0].seq)
        #expect(trace.records[1].error?.kind == "connectionFailed")
        #expect(trace.records[1].error?.message == "no device answered")
    }
}
