import OTACore

/// BlueZ as a ``TransportProvider``: Bluetooth addresses (`AA:BB:CC:DD:EE:FF`), reached with a
/// ``BlueZConnector`` and found with a ``BlueZScanner``.
///
/// ```swift
/// let transports = TransportRegistry([BlueZTransportProvider(), simulator])
/// let device = try await transports.provider(for: "00:AA:01:01:00:01")
///     .device(at: "00:AA:01:01:00:01", options: TransportOptions(["--adapter": ["hci1"]]))
/// ```
///
/// Options it reads from ``TransportOptions``:
/// - `--adapter NAME`: the adapter (`hci0`, or its address); default the first powered one.
/// - `--write-path auto|acquire|writevalue|request`: writes without response through
///   `AcquireWrite` sockets, or as write requests when bluetoothd's EATT may reorder them (`auto`,
///   the default: ``BlueZConnector/Configuration/WriteOrdering/automatic``); always through the
///   socket (`acquire`) or one `WriteValue` command per packet (`writevalue`), even with EATT; or
///   always as write requests (`request`).
/// - `--socket-buffer BYTES|system`: the send buffer asked for on `AcquireWrite` sockets
///   (``BlueZConnector/Configuration/acquiredSocketSendBuffer``), `system` keeping the kernel's.
///
/// - Note: Every wait (listening for an advertisement, the pause while a device restarts between
///   two parts, the connector's timeouts) runs on ``clock``.
public struct BlueZTransportProvider: TransportProvider {
    /// Where bluetoothd is: the system bus, or a test bus.
    let bus: DBusConnection.Bus
    /// How connectors behave; `--write-path` overrides ``BlueZConnector/Configuration/usesAcquireWrite``.
    public var configuration = BlueZConnector.Configuration()
    /// The clock every wait runs on.
    public var clock: any Clock<Duration> = RealTimeClock()
    /// How long to listen for a device's advertisement when the catalog must pick its protocol.
    public var advertisementWindow: Duration = .seconds(5)
    /// How long a device takes to restart into a part it received before it takes the next.
    public var restartDelay: Duration = .seconds(2)

    // The memberwise initializer, `init(bus:configuration:clock:advertisementWindow:restartDelay:)`,
    // creates the provider for bluetoothd on `bus` (tests); the public one is in the extension
    // below so that Swift keeps synthesizing it.

    /// `bluez`.
    public var name: String { "bluez" }

    /// "a Bluetooth address (AA:BB:CC:DD:EE:FF)".
    public var addressForm: String { "a Bluetooth address (AA:BB:CC:DD:EE:FF)" }

    /// Whether `address` is six hex bytes separated by colons.
    public func recognises(_ address: String) -> Bool {
        BlueZ.isValidAddress(address)
    }

    /// The device at `address`, through `--adapter` with `--write-path`, `--socket-buffer`,
    /// `--in-flight`, `--pairing` and `--passkey`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a `--write-path` other than `auto`,
    ///   `acquire`, `writevalue` or `request`, a `--socket-buffer` that is neither a size nor `system`,
    ///   an `--in-flight` that is neither a size nor `off`, a `--pairing` other than `auto`, `first`
    ///   or `once`, or a `--passkey` that is not six digits.
    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        var configuration = configuration
        switch options.value("--write-path") ?? "auto" {
        case "auto": configuration.writeOrdering = .automatic
        case "acquire":
            configuration.usesAcquireWrite = true
            configuration.writeOrdering = .commands
        case "writevalue":
            configuration.usesAcquireWrite = false
            configuration.writeOrdering = .commands
        case "request": configuration.writeOrdering = .requests
        case let other:
            throw OTAError(.invalidParameter, "--write-path '\(other)' is not 'auto', 'acquire', 'writevalue' or 'request'")
        }
        if let size = try Self.size(options, "--socket-buffer", in: 1...16_777_216, or: "system") {
            configuration.acquiredSocketSendBuffer = size
        }
        if let size = try Self.size(options, "--in-flight", in: 1024...16_777_216, or: "off") {
            configuration.deliveryWindow = size
        }
        switch options.value("--pairing") {
        case nil, "auto": break
        case "first": configuration.pairing.pairsFirst = true
        case "once":
            configuration.pairing.pairsFirst = true
            configuration.pairing.removesBondAfterwards = true
        case let other?:
            throw OTAError(.invalidParameter, "--pairing '\(other)' is not 'auto', 'first' or 'once'")
        }
        if let text = options.value("--passkey") {
            guard text.count == 6, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let passkey = UInt32(text) else {
                throw OTAError(.invalidParameter, "--passkey '\(text)' is not six digits (000000...999999)")
            }
            configuration.pairing.passkey = passkey
        }
        let adapter = options.value("--adapter")
        return BlueZDevice(
            connector: BlueZConnector(
                address: address, adapter: adapter, bus: bus, configuration: configuration, clock: clock, askPerson: options.askPerson),
            pairingChosen: options.value("--pairing") != nil || options.value("--passkey") != nil,
            scanner: BlueZDeviceScanner(scanner: BlueZScanner(adapter: adapter, bus: bus), clock: clock),
            advertisementWindow: advertisementWindow, restartDelay: restartDelay)
    }

    /// The size in bytes option `name` gives, `.some(nil)` for `keyword` (no size: the system's,
    /// or none), `nil` when it is not given.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for anything else.
    private static func size(
        _ options: TransportOptions, _ name: String, in range: ClosedRange<Int>, or keyword: String
    ) throws(OTAError) -> Int?? {
        guard let text = options.value(name) else { return nil }
        if text == keyword { return .some(nil) }
        guard let bytes = Int(text), range.contains(bytes) else {
            throw OTAError(
                .invalidParameter, "\(name) '\(text)' is not a size in bytes (\(range.lowerBound)...\(range.upperBound)) or '\(keyword)'")
        }
        return bytes
    }

    /// A scanner on `--adapter`.
    public func scanner(options: TransportOptions) -> any DeviceScanner {
        BlueZDeviceScanner(scanner: BlueZScanner(adapter: options.value("--adapter"), bus: bus), clock: clock)
    }
}

/// A ``BlueZScanner`` as OTACore's ``DeviceScanner``.
struct BlueZDeviceScanner: DeviceScanner {
    let scanner: BlueZScanner
    let clock: any Clock<Duration>

    func discoveries() async throws(OTAError) -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        let heard: AsyncThrowingStream<BlueZScanner.Discovery, any Error>
        do {
            heard = try await scanner.discoveries()
        } catch {
            throw OTAError(error.otaCode, error.message, underlying: error)
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveredDevice.self, throwing: (any Error).self)
        let relay = Task {
            do {
                for try await discovery in heard {
                    continuation.yield(DiscoveredDevice(address: discovery.address, advertisement: discovery.advertisement))
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        // Dropping the stream drops BlueZ's, which stops discovery.
        continuation.onTermination = { _ in relay.cancel() }
        return stream
    }
}

/// A Bluetooth device reached through BlueZ.
struct BlueZDevice: TransportDevice {
    let connector: BlueZConnector
    /// Whether the command line chose how to pair (`--pairing`, `--passkey`): a catalog family's
    /// pairing then does not apply.
    let pairingChosen: Bool
    let scanner: BlueZDeviceScanner
    let advertisementWindow: Duration
    let restartDelay: Duration

    var address: String { connector.address }

    var summary: String { "\(connector.address) through BlueZ (\(connector.adapter ?? "first powered adapter"))" }

    var firmwareProtocol: String? { nil }

    /// Listens for the device, unless a protocol is chosen already (the catalog need not decide).
    func advertisement(chosenProtocol: String?) async throws(OTAError) -> Advertisement? {
        guard chosenProtocol == nil else { return nil }
        return try await scanner.advertisement(of: connector.address, within: advertisementWindow)
    }

    func check(_ images: [FirmwareImage]) {}

    func withSession<R>(
        _ request: SessionRequest,
        _ body: @concurrent (any TransportSession) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        try await body(DirectTransportSession(connector: connector(for: request), clock: scanner.clock, restartDelay: restartDelay))
    }

    /// The connector a session uses: pairing as the device's family asks (``SessionRequest/pairing``)
    /// unless the command line chose how to pair.
    func connector(for request: SessionRequest) -> BlueZConnector {
        guard let pairing = request.pairing, !pairingChosen else { return connector }
        return connector.pairing(as: pairing)
    }
}

extension BlueZTransportProvider {
    /// Creates the provider for the system's bluetoothd.
    ///
    /// - Parameters:
    ///   - configuration: timeouts and write limits of the connectors it makes.
    ///   - clock: the clock every wait runs on.
    ///   - advertisementWindow: how long to listen for a device's advertisement; default 5 s.
    ///   - restartDelay: the pause between two parts of a multi-part update; default 2 s.
    public init(
        configuration: BlueZConnector.Configuration = BlueZConnector.Configuration(),
        clock: any Clock<Duration> = RealTimeClock(),
        advertisementWindow: Duration = .seconds(5),
        restartDelay: Duration = .seconds(2)
    ) {
        self.init(
            bus: .system, configuration: configuration, clock: clock, advertisementWindow: advertisementWindow,
            restartDelay: restartDelay)
    }
}
