// A whole update against the simulator, using the library API directly: the smallest complete
// program that sends an image and watches it land.
//
//     swift run simulated-update [PROFILE]
import Foundation
import OTACore
import OTAProtocolGeneric
import OTATransportSimulator

let profileName = CommandLine.arguments.dropFirst().first ?? DeviceProfile.esp32S3MTU244TwoM.name
let profile: DeviceProfile
do {
    profile = try DeviceProfile.named(profileName)
} catch {
    FileHandle.standardError.write(Data("simulated-update: \(error.message)\n".utf8))
    exit(2)
}

// 1. A deterministic world with one device running the generic protocol's firmware model.
let simulation = Simulation(seed: 1)
let firmware = GenericDeviceModel()
let device = SimulatedDevice(profile: profile, model: firmware, simulation: simulation)

// 2. An image: 64 kB of counting bytes.
let image = try FirmwareImage(bytes: Data((0..<64_000).map { UInt8(truncatingIfNeeded: $0) }), name: "counting.bin")

// 3. The engine on the simulation's clock, the protocol's client, and a connector to the device.
let engine = UpdateEngine(clock: simulation.clock)
let report = try await simulation.run {
    let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
    async let update = engine.update(image, using: GenericClient(), connector: SimulatedConnector(device: device), events: sink)
    for await event in events {
        switch event {
        case .state(let state, let detail, let time):
            print("[\(time.humanReadable)] \(state)\(detail.map { ": \($0)" } ?? "")")
        case .progress(let progress, let time) where progress.bytesAcknowledged == progress.totalBytes:
            print("[\(time.humanReadable)] device confirmed all \(progress.totalBytes) bytes")
        default:
            break
        }
    }
    return try await update
}

// 4. The device's verdict, checked against its flash.
let stored = device.flash.read(0..<image.count)
print("goodput \(Int(report.goodput)) B/s; device holds a byte-identical image: \(stored == (try image.allBytes()))")
