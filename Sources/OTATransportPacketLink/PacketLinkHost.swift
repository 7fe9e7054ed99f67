import Foundation
import OTACore
import Synchronization

/// A ``DeviceModel``'s characteristic served over a packet link, the device's side of a
/// ``PacketLinkTransport``: each packet received is one write without response to the
/// characteristic; what the model notifies is joined into packets (``PacketAssembler``) and each
/// handed to `send`. A reset the model asks for (``PeripheralContext/reboot(after:)``) restarts
/// the model after the delay (its RAM state is lost; the flash is kept).
///
/// The link itself (a serial line, a UDP socket) is the server's that owns the host.
package final class PacketLinkHost: Sendable {
    /// The model served.
    package let model: any DeviceModel
    /// The characteristic packets are written to.
    package let characteristic: CharacteristicID
    /// The model's flash.
    package let flash: any FlashStorage
    private let assembler: Mutex<PacketAssembler>
    private let send: @Sendable (Data) -> Void
    private let restarting: @Sendable () -> Void
    private let peripheral: Peripheral

    /// A host that sends each packet the model notifies with `send`, and calls `restarting` when
    /// the model is about to restart.
    package init(
        model: any DeviceModel, characteristic: CharacteristicID, flash: any FlashStorage, packetLength: @escaping PacketAssembler.PacketLength,
        send: @escaping @Sendable (Data) -> Void, restarting: @escaping @Sendable () -> Void = {}
    ) {
        self.model = model
        self.characteristic = characteristic
        self.flash = flash
        self.send = send
        self.restarting = restarting
        assembler = Mutex(PacketAssembler(packetLength: packetLength))
        peripheral = Peripheral(flash: flash)
        peripheral.host = self
    }

    /// Connects the model.
    package func start() {
        model.connected(peripheral)
    }

    /// Lets go of the model: what it notifies or asks for from now on goes nowhere.
    package func stop() {
        peripheral.host = nil
    }

    /// Writes `packet` to the model.
    package func received(_ packet: Data) {
        _ = model.write(packet, to: characteristic, kind: .withoutResponse, peripheral: peripheral)
    }

    /// Drops a packet the model was part-way through notifying (its client changed).
    package func resetAssembly() {
        assembler.withLock { $0.reset() }
    }

    fileprivate func notify(_ value: Data) {
        for packet in assembler.withLock({ $0.append(value) }) { send(packet) }
    }

    fileprivate func reboot(after delay: Duration) {
        // On a dispatch queue, not a task: the restart must come even while every thread of the
        // cooperative pool is blocked (a test waiting on a client process).
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            resetAssembly()
            restarting()
            model.disconnected()
            model.rebooted()
            model.connected(peripheral)
        }
    }

    /// What the model sees of its host.
    private final class Peripheral: PeripheralContext {
        let flash: any FlashStorage
        private let owner = Mutex<PacketLinkHost?>(nil)

        init(flash: any FlashStorage) { self.flash = flash }

        var host: PacketLinkHost? {
            get { owner.withLock { $0 } }
            set { owner.withLock { $0 = newValue } }
        }

        func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
        func notify(_ value: Data, on characteristic: CharacteristicID) { host?.notify(value) }
        func reboot(after delay: Duration) { host?.reboot(after: delay) }
    }
}
