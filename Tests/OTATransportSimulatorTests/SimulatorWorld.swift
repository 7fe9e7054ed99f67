import Foundation
import OTACore
import OTATransportSimulator
import Synchronization

/// A device model that records data writes and echoes control writes as notifications.
final class RecordingDevice: DeviceModel {
    static let service = GATTUUID("FFF0")!
    static let data = CharacteristicID(service: service, characteristic: GATTUUID("FFF1")!)
    static let control = CharacteristicID(service: service, characteristic: GATTUUID("FFF2")!)

    private let storage = Mutex(Data())

    var received: Data { storage.withLock { $0 } }

    var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: Self.service,
                characteristics: [
                    .init(uuid: Self.data.characteristic, properties: .writeWithoutResponse),
                    .init(uuid: Self.control.characteristic, properties: [.write, .notify, .read]),
                ]
            )
        ]
    }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        if characteristic == Self.data {
            storage.withLock { $0.append(value) }
        } else {
            peripheral.notify(value, on: Self.control)
        }
        return .success
    }
}

/// A simulation with one recording device.
struct SimulatorWorld: Sendable {
    let simulation: Simulation
    let model = RecordingDevice()
    let device: SimulatedDevice

    init(profile: DeviceProfile, seed: UInt64 = 1, packetErrorRate: Double? = nil) {
        simulation = Simulation(seed: seed)
        var profile = profile
        if let packetErrorRate { profile.link.packetErrorRate = packetErrorRate }
        device = SimulatedDevice(profile: profile, model: model, simulation: simulation)
    }
}

/// Lines appended from timers and tasks, in order.
final class Lines: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

/// A device that notes when each write reaches it (in virtual time).
final class ArrivalTimes: DeviceModel {
    private let simulation: Simulation
    private let times = Mutex<[Duration]>([])
    init(simulation: Simulation) { self.simulation = simulation }
    var arrivals: [Duration] { times.withLock { $0 } }
    var services: [GATTServiceDefinition] { RecordingDevice().services }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        let now = simulation.now
        times.withLock { $0.append(now) }
        return .success
    }
}
