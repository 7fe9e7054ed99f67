import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATransportSimulator
import Synchronization

/// The Nordic DFU part of `ota benchmark`: each flow against its protocol bound, the pipelined
/// flow against a client that behaves like Nordic's own libraries on the same modelled link, and
/// both flows on a bootloader that drops packets (docs/benchmarks.md, decision 0024).
enum NordicBenchmark {
    static let protocolName = NordicDFUProtocol.name

    /// Nordic's libraries: PRN 12, strictly Create → data → Calculate Checksum → Execute, 400 ms
    /// after the first Create (the client's defaults).
    static let baseline: ProtocolParameters = ["prn": "12"]
    /// Execute and the next Create queued behind each object, the receipt interval adapting.
    static let pipelined: ProtocolParameters = ["prn": "auto", "pipeline": "on"]

    /// The least time the flow's rules allow on `profile`'s link: every object at link capacity
    /// or at the flash's pace (page erase plus programming), whichever is slower, plus one
    /// connection interval for every answer the flow must have before its next write (an answer
    /// comes in the event after its request at the earliest), plus the first-object delay.
    ///
    /// - init packet: Select, Create, Set PRN, Calculate Checksum, Execute, Set PRN, Select (7);
    /// - strict, per object: Create, Calculate Checksum, Execute (3), and each receipt inside
    ///   the object (with PRN 12 and 17 packets, one);
    /// - pipelined, per object: the Execute's (the Create queued behind it may leave only then),
    ///   the Create's (the next object's packets wait for it): 2. The receipt that ends the
    ///   object comes with the Execute's answer.
    static func bound(imageSize: Int, capacity: Double, profile: DeviceProfile, pipelined: Bool, writeLength: Int) -> Duration {
        let objectSize = NordicBootloaderModel.Configuration().maximumDataObjectSize
        let interval = profile.link.connectionInterval
        var total = NordicDFUConfiguration().dataObjectDelay + interval * 7
        var offset = 0
        while offset < imageSize {
            let size = min(objectSize, imageSize - offset)
            let packets = (size + writeLength - 1) / writeLength
            let answers = pipelined ? 2 : 3 + max(0, (packets - 1) / 12)
            let stream = Duration.seconds(Double(size) / capacity)
            let flash = profile.flash.sectorEraseTime + .seconds(Double(size) / profile.flash.writeBytesPerSecond)
            total += max(stream, flash) + interval * answers
            offset += size
        }
        return total
    }

    /// Issue 18's bound, literally: per object its bytes at link capacity, three sequential round
    /// trips (Create, Calculate Checksum, Execute) and a page erase; plus, as for ``bound(imageSize:capacity:profile:pipelined:writeLength:)``,
    /// the init packet stage's seven round trips and the first object's 400 ms. One round trip is
    /// ``roundTrip(on:seed:)``, measured on the model.
    static func issueBound(imageSize: Int, capacity: Double, profile: DeviceProfile, roundTrip: Duration) -> Duration {
        let objectSize = NordicBootloaderModel.Configuration().maximumDataObjectSize
        var total = NordicDFUConfiguration().dataObjectDelay + roundTrip * 7
        var offset = 0
        while offset < imageSize {
            let size = min(objectSize, imageSize - offset)
            total += .seconds(Double(size) / capacity) + roundTrip * 3 + profile.flash.sectorEraseTime
            offset += size
        }
        return total
    }

    /// The link model's least request → answer → next request time on `profile`, measured: a
    /// central writes Select(data) to the simulated bootloader with response, waits for its
    /// answer (a notification) and writes the next at once, ten times; the least gap between two
    /// of these writes reaching the bootloader is one round trip.
    static func roundTrip(on profile: DeviceProfile, seed: UInt64) async throws -> Duration {
        let simulation = Simulation(seed: seed)
        let probe = ArrivalProbe(NordicBootloaderModel(), clock: { simulation.now })
        let device = SimulatedDevice(profile: profile, model: probe, simulation: simulation)
        try await simulation.run { () async throws -> Void in
            let transport = try await SimulatedConnector(device: device).connect()
            let answers = try await transport.notifications(from: DFUGATTProfile.controlPoint)
            var iterator = answers.makeAsyncIterator()
            let select = DFURequest.select(.data).encoded
            for _ in 0..<10 {
                try await transport.write(select, to: DFUGATTProfile.controlPoint, kind: .withResponse)
                _ = await iterator.next()
            }
            await transport.disconnect()
        }
        let arrivals = probe.arrivals
        return zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }.min() ?? .zero
    }

    /// A bootloader model that notes when each Control Point write reaches it.
    private final class ArrivalProbe: DeviceModel {
        let model: NordicBootloaderModel
        let clock: @Sendable () -> Duration
        private let times = Mutex<[Duration]>([])

        init(_ model: NordicBootloaderModel, clock: @escaping @Sendable () -> Duration) {
            self.model = model
            self.clock = clock
        }

        var arrivals: [Duration] { times.withLock { $0 } }
        var services: [GATTServiceDefinition] { model.services }
        var acknowledgesWritesOnArrival: Bool { model.acknowledgesWritesOnArrival }
        func connected(_ peripheral: any PeripheralContext) { model.connected(peripheral) }
        func disconnected() { model.disconnected() }
        func rebooted() { model.rebooted() }
        func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
            model.read(characteristic, peripheral: peripheral)
        }

        func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
            if characteristic == DFUGATTProfile.controlPoint {
                let now = clock()
                times.withLock { $0.append(now) }
            }
            return model.write(value, to: characteristic, kind: kind, peripheral: peripheral)
        }
    }

    static func report(
        _ descriptor: ProtocolDescriptor, measured: [BenchmarkCommand.Measurement], profiles: [DeviceProfile], image: FirmwareImage, seed: UInt64,
        streams: any OutputStreams
    ) async {
        streams.out(
            "\nnordic-dfu: baseline = a client as Nordic's libraries (prn=12, strict Create → data → checksum → execute, 400 ms before the first object);\n"
                + "pipelined = pipeline=on prn=auto; bound = each object at capacity (or at the flash's pace, if slower) + one interval per answer awaited + 400 ms;\n"
                + "issue = issue 18's bound: each object at capacity + 3 round trips + a page erase (+ the init packet's 7 round trips + 400 ms),\n"
                + "one round trip (rt) measured on the model: Select written, its answer awaited, the next Select written, least gap between arrivals\n\n"
        )
        streams.out(
            comparison.headerRow + "\n")
        for profile in profiles where image.count <= profile.slotSize {
            do {
                let base = try await measurement(descriptor, baseline, profile, image, seed, measured)
                let fast = try await measurement(descriptor, pipelined, profile, image, seed, measured)
                let write = fast.report.link.maximumWriteWithoutResponse
                let strictBound = bound(imageSize: image.count, capacity: fast.capacity, profile: profile, pipelined: false, writeLength: write)
                let pipelinedBound = bound(imageSize: image.count, capacity: fast.capacity, profile: profile, pipelined: true, writeLength: write)
                let rt = try await roundTrip(on: profile, seed: seed)
                let issue = issueBound(imageSize: image.count, capacity: fast.capacity, profile: profile, roundTrip: rt)
                streams.out(
                    comparison.row(
                        [
                            profile.name, Wording.rate(fast.capacity), "\(Int((rt.seconds * 1000).rounded())) ms", Wording.rate(base.report.goodput),
                            percent(strictBound / base.report.protocolDuration), percent(issue / base.report.protocolDuration),
                            Wording.rate(fast.report.goodput), percent(pipelinedBound / fast.report.protocolDuration),
                            percent(issue / fast.report.protocolDuration),
                            String(format: "%.2f×", base.report.protocolDuration / fast.report.protocolDuration),
                        ]) + "\n")
            } catch {
                streams.out(comparison.row([profile.name, "failed: \(error)"]) + "\n")
            }
        }
        streams.out(
            "\nnordic-dfu on a bootloader that drops packets (4 receive buffers, flash programming 40 kB/s: NordicBootloaderModel.Configuration.droppingPackets)\n\n"
        )
        let variants: [ProtocolParameters] = [["prn": "0", "pipeline": "on"], baseline, pipelined]
        let dropping = droppingColumns.fitting(variants.map { BenchmarkCommand.label(protocolName, $0) }, inColumn: 0)
        streams.out(dropping.headerRow + "\n")
        for variant in variants {
            for profile in profiles where image.count <= profile.slotSize {
                var model: NordicBootloaderModel?
                let make: (Simulation) -> any DeviceModel = { simulation in
                    let made = NordicBootloaderModel(configuration: .droppingPackets, clock: { simulation.now })
                    model = made
                    return made
                }
                let label = BenchmarkCommand.label(protocolName, variant)
                do {
                    let m = try await BenchmarkCommand.measure(descriptor, variant: variant, profile: profile, image: image, seed: seed, model: make)
                    let counters = model?.counters
                    streams.out(
                        dropping.row(
                            [
                                label, profile.name, BenchmarkCommand.virtualCell(m.report.protocolDuration), Wording.rate(m.report.goodput),
                                "\(counters?.packetsDropped ?? 0)", "\(max(0, m.report.bytesSent - m.report.imageSize)) B", "completed",
                            ]) + "\n")
                } catch {
                    let message = (error as? OTAError)?.message ?? "\(error)"
                    streams.out(
                        dropping.row([label, profile.name, "-", "-", "\(model?.counters.packetsDropped ?? 0)", "-", "failed: \(message)"]) + "\n")
                }
            }
        }
    }

    /// The main table's measurement of `variant` on `profile`, or a new one.
    private static func measurement(
        _ descriptor: ProtocolDescriptor, _ variant: ProtocolParameters, _ profile: DeviceProfile, _ image: FirmwareImage, _ seed: UInt64,
        _ measured: [BenchmarkCommand.Measurement]
    ) async throws -> BenchmarkCommand.Measurement {
        if let found = measured.first(where: { $0.variant == variant && $0.profile.name == profile.name }) { return found }
        return try await BenchmarkCommand.measure(descriptor, variant: variant, profile: profile, image: image, seed: seed)
    }

    private static let comparison = TextTable(
        ["profile", "capacity", "rt", "baseline", "of bound", "of issue", "pipelined", "of bound", "of issue", "speed-up"],
        minimumWidths: [20, 11, 6, 11, 9, 9, 11, 9, 9, 8])
    private static let droppingColumns = TextTable(
        ["variant", "profile", "virtual", "goodput", "dropped", "resent", "result"], minimumWidths: [32, 20, 9, 11, 8, 9, 9])

    private static func percent(_ ratio: Double) -> String { String(oneDecimal: ratio * 100) + "%" }
}
