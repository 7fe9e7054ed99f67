/// One transport as a tool sees it: the addresses it reaches, how it finds devices, and what it
/// needs around an update.
///
/// A tool keeps a list of providers and hands each `--device` address to the first that
/// ``recognises(_:)`` it; `update`, `abort`, `scan` and `--dry-run` then work the same on every
/// transport (the simulator's `sim:NAME`, BlueZ's `AA:BB:CC:DD:EE:FF`, and later CoreBluetooth
/// identifiers, `serial:`, `udp:`), without the tool knowing which one it talks to.
///
/// ```swift
/// let provider = try #require(providers.first { $0.recognises(address) })
/// let device = try await provider.device(at: address, options: options)
/// try await device.withSession(SessionRequest(protocolName: "framed")) { session throws(OTAError) in
///     try await session.run { () async throws(OTAError) in
///         try await UpdateEngine(clock: session.clock).abort(using: client, connector: session.connector)
///     }
/// }
/// ```
public protocol TransportProvider: Sendable {
    /// A short name, as a tool's `--transport NAME` takes it: `sim`, `bluez`.
    var name: String { get }
    /// The addresses it takes, for messages: "a Bluetooth address (AA:BB:CC:DD:EE:FF)".
    var addressForm: String { get }

    /// Whether `address` is one of this transport's (its scheme or shape; not whether the device
    /// is there).
    func recognises(_ address: String) -> Bool

    /// The device at `address`, checked as far as possible without connecting.
    ///
    /// - Parameters:
    ///   - address: an address this provider ``recognises(_:)``.
    ///   - options: the tool's transport options (adapter, write path, simulator settings…).
    /// - Throws: ``OTAError`` (``OTAError/Code/invalidParameter`` for an unknown device or a bad
    ///   option) with a one-line message.
    func device(at address: String, options: TransportOptions) async throws(OTAError) -> any TransportDevice

    /// A scanner for the devices this transport can reach.
    ///
    /// - Throws: ``OTAError`` (``OTAError/Code/invalidParameter``) for a bad option.
    func scanner(options: TransportOptions) throws(OTAError) -> any DeviceScanner
}

/// The options a tool passes to every provider: option values by name, as typed
/// (`"--adapter": ["hci0"]`). A provider reads the ones it knows and ignores the rest.
public struct TransportOptions: Sendable {
    /// Values by option name (with its dashes), in the order given.
    public var values: [String: [String]]
    /// Whether a person watches the output as it happens (a terminal), so that a transport may
    /// pace itself for them (the simulator runs at real speed then).
    public var isInteractive: Bool
    /// Asks the person running the tool a question (the passkey a device shows while pairing) and
    /// returns their answer; `nil` when nobody can answer (no terminal). The answer is `nil` when
    /// they gave none.
    public var askPerson: (@Sendable (_ question: String) async -> String?)?

    /// Creates options.
    public init(
        _ values: [String: [String]] = [:], isInteractive: Bool = false, askPerson: (@Sendable (_ question: String) async -> String?)? = nil
    ) {
        self.values = values
        self.isInteractive = isInteractive
        self.askPerson = askPerson
    }

    /// The last value of a single-valued option.
    public func value(_ name: String) -> String? { values[name]?.last }
}

/// A device a ``TransportProvider`` resolved: what can be known about it before connecting, and
/// the scope an update or an abort runs in.
public protocol TransportDevice: Sendable {
    /// Its address, normalised (`00:AA:01:01:00:01`, `sim:bolt-lock`).
    var address: String { get }
    /// What it is and how it is reached, for a dry run: "00:AA:01:01:00:01 through BlueZ (hci0)".
    var summary: String { get }
    /// The protocol its firmware is known to run, when the transport knows it (a simulated
    /// device); `nil` for a real device, whose protocol comes from the command line, the
    /// package or the catalog.
    var firmwareProtocol: String? { get }

    /// What the device advertises, for the catalog to match; `nil` when it is not known.
    ///
    /// - Parameter chosenProtocol: the protocol already chosen (by the command line or the
    ///   package), if any. A device that must listen to the radio to learn its advertisement
    ///   does not when a protocol is chosen; a simulated device without firmware of its own runs
    ///   the chosen one.
    /// - Throws: ``OTAError`` when the device cannot be heard, or cannot run an update without a
    ///   chosen protocol (``OTAError/Code/selectionFailed``).
    func advertisement(chosenProtocol: String?) async throws(OTAError) -> Advertisement?

    /// Refuses, before connecting, images the device cannot take (larger than its update slot).
    ///
    /// - Throws: ``OTAError/Code/imageTooLarge``.
    func check(_ images: [FirmwareImage]) throws(OTAError)

    /// The firmware version the device runs, when it can be known without connecting (a
    /// simulated device); `nil` otherwise, and for a real device.
    ///
    /// - Parameter chosenProtocol: the protocol chosen, as for ``advertisement(chosenProtocol:)``.
    func runningVersion(chosenProtocol: String?) -> ReportedVersion?

    /// Seeds the random choices of an update of this device (``UpdateConfiguration/randomSeed``)
    /// when its transport repeats exactly: the simulator's seed, a replay's recorded one; `nil`
    /// for a radio.
    var randomSeed: UInt64? { get }

    /// Opens what an update or an abort needs (a connector, a clock, the world it runs in), runs
    /// `body`, and closes it (a simulated device saves its state).
    ///
    /// - Important: When `body` throws, the session is left as it is (nothing is saved).
    /// - Throws: ``OTAError`` when the session cannot be opened or closed, or what `body` throws.
    func withSession<R>(
        _ request: SessionRequest,
        _ body: @concurrent (any TransportSession) async throws(OTAError) -> R
    ) async throws(OTAError) -> R
}

/// What a session is opened for: ``TransportDevice/withSession(_:_:)``.
public struct SessionRequest: Sendable, Hashable {
    /// The protocol the update speaks (a simulated device without firmware of its own runs it).
    public var protocolName: String
    /// The total size of what will be sent, in bytes (0 for an abort); fault injection by
    /// percentage uses it.
    public var imageSize: Int
    /// The ATT MTU to offer, where the central chooses it (the simulator); a stack that
    /// negotiates its own (BlueZ, CoreBluetooth) ignores it.
    public var offeredMTU: Int
    /// Pairing the device's family requires (catalog `pairing`), applied where the command line
    /// chose none; `nil` for none.
    public var pairing: LinkPairing?

    /// Creates a request.
    public init(protocolName: String, imageSize: Int = 0, offeredMTU: Int = 517, pairing: LinkPairing? = nil) {
        self.protocolName = protocolName
        self.imageSize = imageSize
        self.offeredMTU = offeredMTU
        self.pairing = pairing
    }
}

/// What an update or an abort runs with, from ``TransportDevice/withSession(_:_:)``.
public protocol TransportSession: Sendable {
    /// Opens the link; the engine reconnects through it. It follows the device
    /// (``FollowingConnector``): after a jump to where the engine found the device again, so
    /// that every part of a multi-part update after the first starts there, not where the
    /// update began (on a radio, a bootloader at the next address).
    var connector: any Connector { get }
    /// The clock every wait of the update runs on; give it to ``UpdateEngine``.
    var clock: any Clock<Duration> { get }
    /// The executor tasks that follow the update (an event renderer) should prefer, when the
    /// transport runs on its own (the simulator's virtual-time executor); `nil` otherwise.
    var executor: (any TaskExecutor)? { get }
    /// How long a device takes to restart into what it just received, before the next part of a
    /// multi-part update.
    var restartDelay: Duration { get }
    /// Runs `body` where the transport runs (inside the simulation, in virtual time; directly
    /// for a radio).
    ///
    /// - Throws: what `body` throws, or ``OTAError/Code/internal`` when the transport's world
    ///   fails (a simulation deadlock).
    func run<R: Sendable>(_ body: @escaping @Sendable @concurrent () async throws(OTAError) -> R) async throws(OTAError) -> R
}

extension TransportDevice {
    /// Not known without connecting.
    public func runningVersion(chosenProtocol: String?) -> ReportedVersion? { nil }

    /// None: the system's random source.
    public var randomSeed: UInt64? { nil }
}

extension TransportSession {
    /// Waits ``restartDelay`` on ``clock`` while the device restarts between two parts.
    ///
    /// - Throws: ``OTAError/Code/cancelled`` when cancelled while waiting.
    public func waitForRestart() async throws(OTAError) {
        let (clock, delay) = (clock, restartDelay)
        try await run { () async throws(OTAError) in
            do {
                try await clock.sleep(for: delay)
            } catch {
                throw OTAError(.cancelled, "cancelled while waiting for the device to restart")
            }
        }
    }
}

/// The providers a tool knows, in the order they are asked.
public struct TransportRegistry: Sendable {
    /// The providers; the first that recognises an address reaches it.
    public var providers: [any TransportProvider]

    /// Creates a registry.
    public init(_ providers: [any TransportProvider]) {
        self.providers = providers
    }

    /// The provider for `address`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` naming the address forms this build takes.
    public func provider(for address: String) throws(OTAError) -> any TransportProvider {
        if let provider = providers.first(where: { $0.recognises(address) }) { return provider }
        let forms = providers.map(\.addressForm)
        let expected =
            switch forms.count {
            case 0: "not reachable: this build has no transport"
            case 1: "not \(forms[0])"
            case 2: "neither \(forms[0]) nor \(forms[1])"
            default: "none of \(forms.dropLast().joined(separator: ", ")) or \(forms[forms.count - 1])"
            }
        throw OTAError(.invalidParameter, "device '\(address)' is \(expected)")
    }

    /// The provider called `name`.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` listing the names.
    public func provider(named name: String) throws(OTAError) -> any TransportProvider {
        if let provider = providers.first(where: { $0.name == name }) { return provider }
        throw OTAError(
            .invalidParameter,
            "no transport '\(name)' (available: \(providers.map(\.name).joined(separator: ", ")))")
    }
}
