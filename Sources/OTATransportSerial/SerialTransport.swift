import Foundation
import OTACore
import Synchronization

/// How a protocol's packets travel on a serial line; the protocol supplies it (MCUmgr: Zephyr's
/// base64 lines with markers and a CRC-16), so this target imports no protocol.
public struct SerialFraming: Sendable {
    /// The length of the packet bytes start with, to join a protocol's writes into packets.
    public var packetLength: PacketAssembler.PacketLength
    /// One packet as the bytes sent on the line.
    public var encode: @Sendable (Data) -> Data
    /// A fresh decoder for one connection: bytes from the line in, whole packets out (bad frames
    /// dropped: the protocol's timeout reports a packet that never came).
    public var makeDecoder: @Sendable () -> @Sendable (Data) -> [Data]

    /// A framing.
    public init(
        packetLength: @escaping PacketAssembler.PacketLength, encode: @escaping @Sendable (Data) -> Data,
        makeDecoder: @escaping @Sendable () -> @Sendable (Data) -> [Data]
    ) {
        self.packetLength = packetLength
        self.encode = encode
        self.makeDecoder = makeDecoder
    }
}

/// A `serial:PATH[@BAUD]` address.
public struct SerialAddress: Sendable, Hashable, CustomStringConvertible {
    /// The scheme.
    public static let scheme = "serial:"
    /// The default rate (ignored by USB CDC ACM ports and pseudo-terminals).
    public static let defaultBaud = 115_200
    /// The device path.
    public var path: String
    /// The baud rate.
    public var baud: Int

    /// An address.
    public init(path: String, baud: Int = SerialAddress.defaultBaud) {
        self.path = path
        self.baud = baud
    }

    /// Parses `serial:PATH` or `serial:PATH@BAUD`.
    public init(parsing text: String) throws(OTAError) {
        guard text.hasPrefix(Self.scheme) else { throw OTAError(.invalidParameter, "'\(text)' is not a serial:PATH address") }
        var rest = String(text.dropFirst(Self.scheme.count))
        var baud = Self.defaultBaud
        if let at = rest.lastIndex(of: "@") {
            let rate = rest[rest.index(after: at)...]
            guard let value = Int(rate), SerialPort.speed(value) != nil else {
                throw OTAError(.invalidParameter, "'\(text)': '\(rate)' is not a baud rate (9600, 19200, 38400, 57600, 115200, 230400, …)")
            }
            baud = value
            rest = String(rest[..<at])
        }
        guard rest.hasPrefix("/") else {
            throw OTAError(.invalidParameter, "'\(text)' names no device path (serial:/dev/ttyACM0)")
        }
        path = rest
        self.baud = baud
    }

    public var description: String { baud == Self.defaultBaud ? "serial:\(path)" : "serial:\(path)@\(baud)" }
}

/// A protocol's packets on a serial line, shown as one characteristic written without response
/// and notifying: writes are joined into packets, each packet is framed and written to the line;
/// what the line carries is decoded into packets, each one notification. Lines that are not
/// packets (a console's log output) are skipped by the framing.
public final class SerialTransport: Transport {
    private struct State {
        var assembler: PacketAssembler
        var subscriber: AsyncStream<Data>.Continuation?
        /// Which subscription ``subscriber`` is, so that an older one's end does not drop a newer one.
        var subscription = 0
        var disconnection: AsyncStream<DisconnectReason>.Continuation?
        var lost: DisconnectReason?
    }

    /// The one characteristic.
    public let characteristic: CharacteristicID
    public let link: LinkParameters
    /// Where.
    public let address: SerialAddress
    public let disconnections: AsyncStream<DisconnectReason>
    private let port: SerialPort
    private let framing: SerialFraming
    private let state: Mutex<State>

    init(port: SerialPort, address: SerialAddress, characteristic: CharacteristicID, maximumWrite: Int, framing: SerialFraming) {
        self.port = port
        self.address = address
        self.characteristic = characteristic
        self.framing = framing
        link = LinkParameters(
            attMTU: maximumWrite + 3, maximumWriteWithoutResponse: maximumWrite, maximumWriteWithResponse: maximumWrite,
            summary: "serial \(address.path) at \(address.baud) baud")
        let (disconnections, continuation) = AsyncStream.makeStream(of: DisconnectReason.self)
        self.disconnections = disconnections
        state = Mutex(State(assembler: PacketAssembler(packetLength: framing.packetLength), disconnection: continuation))
        let decode = framing.makeDecoder()
        port.startReceiving(
            { [weak self] bytes in
                for packet in decode(bytes) { self?.received(packet) }
            },
            ended: { [weak self] reason in self?.lose(DisconnectReason(reason.map { "serial: \($0)" } ?? "closed by the app", isLocal: reason == nil)) })
    }

    public var characteristics: [CharacteristicID: CharacteristicProperties] { [characteristic: [.writeWithoutResponse, .notify]] }

    private func received(_ packet: Data) {
        state.withLock { $0.subscriber }?.yield(packet)
    }

    private func lose(_ reason: DisconnectReason) {
        let (subscriber, disconnection) = state.withLock { state -> (AsyncStream<Data>.Continuation?, AsyncStream<DisconnectReason>.Continuation?) in
            guard state.lost == nil else { return (nil, nil) }
            state.lost = reason
            defer {
                state.subscriber = nil
                state.disconnection = nil
            }
            return (state.subscriber, state.disconnection)
        }
        subscriber?.finish()
        disconnection?.yield(reason)
        disconnection?.finish()
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind) async throws(TransportError) {
        try requireCharacteristic(characteristic, allowing: kind == .withoutResponse ? .writeWithoutResponse : .write)
        guard value.count <= link.maximumWriteWithoutResponse else {
            throw TransportError(
                .valueTooLong(length: value.count, maximum: link.maximumWriteWithoutResponse),
                "a write of \(value.count) bytes is longer than the \(link.maximumWriteWithoutResponse) bytes one write carries")
        }
        let result: Result<[Data], TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            return .success(state.assembler.append(value))
        }
        for packet in try result.get() {
            if let problem = port.write(framing.encode(packet)) {
                throw TransportError(.other, "cannot write to \(address.path): \(problem)")
            }
        }
    }

    public func read(_ characteristic: CharacteristicID) async throws(TransportError) -> Data {
        throw TransportError(.notPermitted, "\(address) carries packets only; nothing can be read")
    }

    public func notifications(from characteristic: CharacteristicID) async throws(TransportError) -> AsyncStream<Data> {
        try requireCharacteristic(characteristic, allowing: .notify)
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        let subscribed: Result<Int, TransportError> = state.withLock { state in
            if let lost = state.lost { return .failure(.disconnected(lost)) }
            state.subscriber?.finish()
            state.subscriber = continuation
            state.subscription += 1
            return .success(state.subscription)
        }
        let subscription = try subscribed.get()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                if state.subscription == subscription { state.subscriber = nil }
            }
        }
        return stream
    }

    public func disconnect() async {
        await port.closeAndWait()
        lose(.closedByApp)
    }
}

/// Opens a ``SerialTransport``.
public struct SerialConnector: Connector {
    /// Where.
    public var address: SerialAddress
    /// The characteristic shown.
    public var characteristic: CharacteristicID
    /// Bytes per write (packets longer than a write are still one frame).
    public var maximumWrite: Int
    /// How packets are framed.
    public var framing: SerialFraming

    /// A connector.
    public init(address: SerialAddress, characteristic: CharacteristicID, maximumWrite: Int = 2048, framing: SerialFraming) {
        self.address = address
        self.characteristic = characteristic
        self.maximumWrite = maximumWrite
        self.framing = framing
    }

    public var deviceDescription: String { address.description }

    public func connect() async throws(TransportError) -> any Transport {
        let port: SerialPort
        do {
            port = try SerialPort.open(address.path, baud: address.baud)
        } catch {
            throw TransportError(.connectionFailed, error.message)
        }
        return SerialTransport(port: port, address: address, characteristic: characteristic, maximumWrite: maximumWrite, framing: framing)
    }
}

/// Serial lines as a ``TransportProvider``: `serial:PATH[@BAUD]` reaches a device that speaks a
/// protocol on a UART or USB CDC port (MCUmgr: Zephyr's SMP console/UART transport).
public struct SerialTransportProvider: TransportProvider {
    /// The protocol the line carries.
    public var protocolName: String
    /// The characteristic the protocol's client uses.
    public var characteristic: CharacteristicID
    /// The service a device reached this way is taken to advertise (for the catalog).
    public var advertisedService: GATTUUID?
    /// How packets are framed.
    public var framing: SerialFraming

    /// A provider.
    public init(protocolName: String, characteristic: CharacteristicID, advertisedService: GATTUUID? = nil, framing: SerialFraming) {
        self.protocolName = protocolName
        self.characteristic = characteristic
        self.advertisedService = advertisedService
        self.framing = framing
    }

    public var name: String { "serial" }
    public var addressForm: String { "a serial port (serial:/dev/ttyACM0)" }
    public func recognises(_ address: String) -> Bool { address.hasPrefix(SerialAddress.scheme) }

    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        let parsed = try SerialAddress(parsing: address)
        return SerialDevice(
            connector: SerialConnector(address: parsed, characteristic: characteristic, framing: framing), protocolName: protocolName,
            advertisedService: advertisedService)
    }

    public func scanner(options: TransportOptions) -> any DeviceScanner { SerialScanner() }
}

struct SerialDevice: TransportDevice {
    let connector: SerialConnector
    let protocolName: String
    let advertisedService: GATTUUID?

    var address: String { connector.address.description }
    var summary: String { "\(connector.address) (\(protocolName) on a serial line)" }
    var firmwareProtocol: String? { protocolName }
    func advertisement(chosenProtocol: String?) -> Advertisement? {
        Advertisement(name: address, serviceUUIDs: advertisedService.map { [$0] } ?? [])
    }
    func check(_ images: [FirmwareImage]) {}
    func withSession<R>(_ request: SessionRequest, _ body: (any TransportSession) async throws(OTAError) -> R) async throws(OTAError) -> R {
        try await body(Session(connector: connector))
    }

    struct Session: TransportSession {
        let connector: any Connector
        var clock: any Clock<Duration> { ContinuousClock() }
        var executor: (any TaskExecutor)? { nil }
        var restartDelay: Duration { .seconds(2) }
        func run<R: Sendable>(_ body: @escaping @Sendable () async throws(OTAError) -> R) async throws(OTAError) -> R { try await body() }
    }
}

struct SerialScanner: DeviceScanner {
    var clock: any Clock<Duration> { ContinuousClock() }
    func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> { AsyncThrowingStream { $0.finish() } }
}

/// Serves a ``DeviceModel``'s characteristic on a serial line (the controlling side of a
/// ``PseudoTerminal``, or a real port): decoded packets are writes, what the model notifies is
/// joined into packets and framed back. A reboot restarts the model after its delay.
public final class SerialDeviceServer: Sendable {
    private let port: SerialPort
    private let framing: SerialFraming
    private let assembler: Mutex<PacketAssembler>
    private let peripheral: Peripheral
    /// The model.
    public let model: any DeviceModel
    /// The characteristic packets are written to.
    public let characteristic: CharacteristicID
    /// The model's flash.
    public let flash: any FlashStorage

    /// A server on `descriptor`, which it owns from now on.
    public init(model: any DeviceModel, characteristic: CharacteristicID, flash: any FlashStorage, descriptor: Int32, framing: SerialFraming) {
        self.model = model
        self.characteristic = characteristic
        self.flash = flash
        self.framing = framing
        port = SerialPort(descriptor: descriptor, outlivesHangUp: true)
        assembler = Mutex(PacketAssembler(packetLength: framing.packetLength))
        peripheral = Peripheral(flash: flash)
        peripheral.server = self
    }

    /// Starts serving on a thread of its own.
    public func start() {
        model.connected(peripheral)
        let decode = framing.makeDecoder()
        port.startReceiving(
            { [self] bytes in
                for packet in decode(bytes) { _ = model.write(packet, to: characteristic, kind: .withoutResponse, peripheral: peripheral) }
            }, ended: { _ in })
    }

    /// Stops serving.
    public func stop() {
        port.close()
        peripheral.server = nil
    }

    fileprivate func notify(_ value: Data) {
        for packet in assembler.withLock({ $0.append(value) }) { _ = port.write(framing.encode(packet)) }
    }

    fileprivate func reboot(after delay: Duration) {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
            assembler.withLock { $0.reset() }
            model.disconnected()
            model.rebooted()
            model.connected(peripheral)
        }
    }

    private final class Peripheral: PeripheralContext {
        let flash: any FlashStorage
        private let owner = Mutex<SerialDeviceServer?>(nil)
        init(flash: any FlashStorage) { self.flash = flash }
        var server: SerialDeviceServer? {
            get { owner.withLock { $0 } }
            set { owner.withLock { $0 = newValue } }
        }
        func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
        func notify(_ value: Data, on characteristic: CharacteristicID) { server?.notify(value) }
        func reboot(after delay: Duration) { server?.reboot(after: delay) }
    }
}
