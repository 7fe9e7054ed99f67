import Foundation
import OTACore
import OTATransportSimulator

/// `replay:FILE`: a device that replays an update recorded with `ota update --trace FILE`, in
/// virtual time, checking that the client does again what it did then. The simulator's provider
/// serves it (a replay is a simulated device whose behaviour comes from a recording).
struct ReplayDevice: TransportDevice {
    /// `replay:`.
    static let scheme = "replay:"

    var address: String
    var trace: Trace
    var name: String

    /// The recording `address` names, read and checked.
    init(address: String) throws(OTAError) {
        let path = String(address.dropFirst(Self.scheme.count))
        self.address = address
        self.name = MessageText.name(path)
        self.trace = try Trace(contentsOf: URL(fileURLWithPath: path))
    }

    var summary: String { "\(address) (a replay of \(trace.header.protocolName) with \(trace.header.device))" }

    var firmwareProtocol: String? { trace.header.protocolName }

    /// The seed the recorded update drew its random choices from, so that the replay makes the
    /// same ones (a bootloader's name); 1, the simulator's default, for a trace without one.
    var randomSeed: UInt64? { trace.header.randomSeed ?? 1 }

    /// What the recorded device offered, as an advertisement: its services, for the catalog.
    func advertisement(chosenProtocol: String?) -> Advertisement? {
        let services = trace.records.first { $0.op == .connected }?.characteristics?.compactMap { GATTUUID($0.service) } ?? []
        var unique: [GATTUUID] = []
        for service in services where !unique.contains(service) { unique.append(service) }
        return Advertisement(name: "replay", serviceUUIDs: unique)
    }

    /// The images must be the ones recorded: a replay of other bytes diverges at the first chunk.
    func check(_ images: [FirmwareImage]) throws(OTAError) {
        let recorded = trace.header.images
        let given = images.map(TraceImage.init)
        guard recorded.map(\.size) == given.map(\.size), recorded.map(\.crc32) == given.map(\.crc32) else {
            let describe = { (images: [TraceImage]) in images.map { "\($0.name) (\($0.size) bytes, CRC-32 \($0.crc32))" }.joined(separator: ", ") }
            throw OTAError(.invalidImage, "\(name) recorded \(describe(recorded)), not \(describe(given)): replay it with the same firmware")
        }
    }

    func withSession<R>(_ request: SessionRequest, _ body: @concurrent (any TransportSession) async throws(OTAError) -> R) async throws(OTAError) -> R {
        let simulation = Simulation(seed: 1)
        let replay = TraceReplay(trace, name: name, clock: simulation.clock, executor: simulation.executor)
        let result = try await body(SimulatedSession(connector: replay.connector, simulation: simulation))
        if let verdict = replay.verdict {
            throw OTAError(.transport, "the replay of \(name) differs from the recording: \(verdict)")
        }
        return result
    }
}
