import Foundation
import OTACore
import Synchronization

/// Serves a ``DeviceModel``'s characteristic over UDP, one packet per datagram: each datagram
/// received is one write without response to the characteristic; what the model notifies is
/// joined into packets (``PacketAssembler``) and each sent as one datagram to the sender of the
/// request. What third-party clients (smpclient, smpmgr, Zephyr's mcumgr tools) talk to when the
/// MCUmgr device model is served this way.
///
/// A reset the model asks for (``PeripheralContext/reboot(after:)``) restarts the model after
/// the delay (its RAM state is lost; the flash is kept); datagrams go on being served.
public final class UDPDeviceServer: Sendable {
    private struct State {
        var peer: UDPPeer?
        var assembler: PacketAssembler
        var requests = 0
        var responses = 0
        var reboots = 0
    }

    /// The model served.
    public let model: any DeviceModel
    /// The characteristic the datagrams are written to.
    public let characteristic: CharacteristicID
    /// The model's flash.
    public let flash: any FlashStorage
    private let socket: UDPSocket
    private let state: Mutex<State>
    private let log: @Sendable (String) -> Void
    private let peripheral: Peripheral

    /// Binds `port` on `host` (`nil`: every local address; 0: a free port, see ``port``).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when the port cannot be bound.
    public init(
        model: any DeviceModel, characteristic: CharacteristicID, flash: any FlashStorage, host: String? = nil, port: UInt16,
        packetLength: @escaping PacketAssembler.PacketLength, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(OTAError) {
        self.model = model
        self.characteristic = characteristic
        self.flash = flash
        self.log = log
        socket = try UDPSocket.bound(host: host, port: port)
        state = Mutex(State(assembler: PacketAssembler(packetLength: packetLength)))
        peripheral = Peripheral(flash: flash)
        peripheral.server = self
    }

    /// The port it listens on.
    public var port: UInt16 { socket.localPort }

    /// Requests received, responses sent, resets.
    public var statistics: (requests: Int, responses: Int, reboots: Int) { state.withLock { ($0.requests, $0.responses, $0.reboots) } }

    /// Starts serving (a thread of its own); returns at once.
    public func start() {
        model.connected(peripheral)
        socket.startReceiving(
            { [self] datagram, peer in
                state.withLock { state in
                    if state.peer != peer { state.assembler.reset() }
                    state.peer = peer
                    state.requests += 1
                }
                _ = model.write(datagram, to: characteristic, kind: .withoutResponse, peripheral: peripheral)
            },
            ended: { [log] reason in
                if let reason { log("udp: receiving ended: \(reason)") }
            })
    }

    /// Stops serving.
    public func stop() {
        socket.close()
    }

    fileprivate func notify(_ value: Data) {
        let (peer, packets): (UDPPeer?, [Data]) = state.withLock { state in
            let packets = state.assembler.append(value)
            state.responses += packets.count
            return (state.peer, packets)
        }
        guard let peer else { return }
        for packet in packets {
            if let problem = socket.send(packet, to: peer) { log("udp: cannot answer \(peer): \(problem)") }
        }
    }

    fileprivate func reboot(after delay: Duration) {
        let model = self.model
        let peripheral = self.peripheral
        // On a dispatch queue, not a task: the restart must come even while every thread of the
        // cooperative pool is blocked (a test waiting on a client process).
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            state.withLock { state in
                state.reboots += 1
                state.assembler.reset()
            }
            log("udp: the device restarts")
            model.disconnected()
            model.rebooted()
            model.connected(peripheral)
        }
    }

    /// What the model sees of its host.
    private final class Peripheral: PeripheralContext {
        let flash: any FlashStorage
        private let owner = Mutex<UDPDeviceServer?>(nil)

        init(flash: any FlashStorage) { self.flash = flash }

        var server: UDPDeviceServer? {
            get { owner.withLock { $0 } }
            set { owner.withLock { $0 = newValue } }
        }

        func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
        func notify(_ value: Data, on characteristic: CharacteristicID) { server?.notify(value) }
        func reboot(after delay: Duration) { server?.reboot(after: delay) }
    }
}
