import Foundation
import OTACore
import OTATransportPacketLink
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
    private let traffic: Traffic
    private let host: PacketLinkHost
    /// The model's flash.
    public var flash: any FlashStorage { host.flash }

    /// Binds `port` on `host` (`nil`: every local address; 0: a free port, see ``port``).
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when the port cannot be bound.
    public init(
        model: any DeviceModel, characteristic: CharacteristicID, flash: any FlashStorage, host: String? = nil, port: UInt16,
        packetLength: @escaping PacketAssembler.PacketLength, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(OTAError) {
        let traffic = Traffic(socket: try UDPSocket.bound(host: host, port: port), log: log)
        self.traffic = traffic
        self.host = PacketLinkHost(
            model: model, characteristic: characteristic, flash: flash, packetLength: packetLength, send: traffic.answer,
            restarting: traffic.restarting)
    }

    /// The port it listens on.
    public var port: UInt16 { traffic.socket.localPort }

    /// Requests received, responses sent, resets.
    public var statistics: (requests: Int, responses: Int, reboots: Int) { traffic.statistics }

    /// Starts serving (a thread of its own); returns at once.
    public func start() {
        host.start()
        traffic.socket.startReceiving(
            { [traffic, host] datagram, peer in
                // A reply part-way assembled was for the other client.
                if traffic.heard(from: peer) { host.resetAssembly() }
                host.received(datagram)
            },
            ended: { [traffic] reason in
                if let reason { traffic.log("udp: receiving ended: \(reason)") }
            })
    }

    /// Stops serving.
    public func stop() {
        traffic.socket.close()
        host.stop()
    }

    /// The socket, whom it answers (the sender of the latest request), and what it counted.
    private final class Traffic: Sendable {
        struct State {
            var peer: UDPPeer?
            var requests = 0
            var responses = 0
            var reboots = 0
        }

        let socket: UDPSocket
        let log: @Sendable (String) -> Void
        private let state = Mutex(State())

        init(socket: UDPSocket, log: @escaping @Sendable (String) -> Void) {
            self.socket = socket
            self.log = log
        }

        var statistics: (requests: Int, responses: Int, reboots: Int) { state.withLock { ($0.requests, $0.responses, $0.reboots) } }

        /// Counts a request from `peer`, who is answered from now on; whether it is another peer.
        func heard(from peer: UDPPeer) -> Bool {
            state.withLock { state in
                defer {
                    state.peer = peer
                    state.requests += 1
                }
                return state.peer != peer
            }
        }

        /// Sends one packet of a response to the latest peer.
        @Sendable func answer(_ packet: Data) {
            let peer: UDPPeer? = state.withLock { state in
                state.responses += 1
                return state.peer
            }
            guard let peer else { return }
            if let problem = socket.send(packet, to: peer) { log("udp: cannot answer \(peer): \(problem)") }
        }

        @Sendable func restarting() {
            state.withLock { $0.reboots += 1 }
            log("udp: the device restarts")
        }
    }
}
