// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import Foundation
import OTACore
import Synchronization

/// A device that keeps every byte written to its one data characteristic, in order: what the
/// flow-control tests compare with what was sent.
final class SinkDeviceModel: DeviceModel {
    static let service = GATTUUID("5A1E0001-0000-1000-8000-00805F9B34FB")!
    static let data = CharacteristicID(service: service, characteristic: GATTUUID("5A1E0002-0000-1000-8000-00805F9B34FB")!)
    static let control = CharacteristicID(service: service, characteristic: GATTUUID("5A1E0003-0000-1000-8000-00805F9B34FB")!)

    private let received = Mutex(Data())

    var services: [GATTServiceDefinition] {
        [
            GATTServiceDefinition(
                uuid: Self.service,
                characteristics: [
                    .init(uuid: Self.data.characteristic, properties: [.writeWithoutResponse, .write]),
                    .init(uuid: Self.control.characteristic, properties: [.write, .read, .notify]),
                ])
        ]
    }

    /// Everything received on the data characteristic.
    var bytes: Data { received.withLock { $0 } }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        if characteristic == Self.data {
            received.withLock { $0.append(value) }
        } else if characteristic == Self.control {
            // Echo commands back as a notification.
            peripheral.notify(value, on: Self.control)
        }
        return .success
    }

    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        .success(Data("sink".utf8))
    }
}
#endif
