// ota-peripheral: serves a protocol's device model as a real GATT peripheral through BlueZ, for
// the real-stack tests (Tests/RealStack/run-tests.sh) and demos.
//
//   ota-peripheral --protocol NAME [--param KEY=VALUE]... [--adapter hci1] [--name OTA-Test]
//                  [--flash-size BYTES] [--image-out PATH] [--image-size BYTES]
//                  [--drop-link-after BYTES] [--dying-link-after BYTES] [--dying-link-for SECONDS]
//                  [--softdevice FWID] [--readvertise SECONDS]
//   ota-peripheral --protocol mcumgr --smp-udp PORT [--udp-host ADDRESS] | --smp-pty [--flash-size BYTES]
//                  [--image-out PATH] [--image-size BYTES]
//
// Prints `ready <adapter address>` on standard output once the GATT application and the
// advertisement are registered, then serves until SIGTERM or SIGINT. On the way out it unregisters
// both and, with --image-out, writes the first --image-size bytes of the device's flash (the whole
// flash without --image-size) to PATH, so that a test can compare them with the image it sent.
// Diagnostics and a final `stats ...` line go to standard error. With --smp-udp it serves the
// MCUmgr device model as an SMP server over UDP instead (no Bluetooth), for third-party clients
// (Tests/ThirdParty/smp-udp.sh), and prints `ready udp:HOST:PORT`.
//
// Exit status: 0 after a signal, 1 when serving failed, 2 for bad arguments.
#if os(Linux)
import Foundation
import OTACommandLine
import OTACore
import OTAProtocolMCUmgr
import OTAProtocolNordicDFU
import OTATransportBlueZ
import OTATransportSerial
import OTATransportUDP

let spec = CommandSpec(
    name: "",
    summary: "Serve a protocol's device model as a GATT peripheral through BlueZ, for the real-stack tests.",
    options: [
        .init(name: "--protocol", valueName: "NAME", help: "the device model to serve (ota protocols lists them)"),
        .init(name: "--param", valueName: "KEY=VALUE", help: "a protocol parameter, as for ota update (repeatable)", repeatable: true),
        .init(name: "--adapter", valueName: "NAME", help: "the BlueZ adapter that plays the peripheral (default hci1)"),
        .init(name: "--name", valueName: "TEXT", help: "the advertised local name (default OTA-Test)"),
        .init(name: "--flash-size", valueName: "BYTES", help: "the device's flash, whole 4 KiB sectors (default 1048576)"),
        .init(
            name: "--security", valueName: "LEVEL",
            help: "what link the characteristics need: open (default), encrypted (the central must pair) or authenticated (pairing with a passkey)"),
        .init(name: "--passkey", valueName: "DIGITS", help: "the six digits the pairing agent enters (default: Just Works)"),
        .init(name: "--image-out", valueName: "PATH", help: "on SIGTERM/SIGINT, write the device's flash to PATH"),
        .init(name: "--image-size", valueName: "BYTES", help: "write only the first BYTES bytes of flash to --image-out"),
        .init(
            name: "--drop-link-after", valueName: "BYTES",
            help: "disconnect the central once BYTES bytes of data (writes without response) arrived, once"),
        .init(
            name: "--dying-link-after", valueName: "BYTES",
            help: "once BYTES bytes of data arrived, lose further data but answer requests, then disconnect (once)"),
        .init(
            name: "--dying-link-for", valueName: "SECONDS",
            help: "how long a dying link keeps answering requests before it drops (default 2, bluetoothd's timer)"),
        .init(
            name: "--softdevice", valueName: "FWID",
            help: "nordic-dfu: the SoftDevice FWID the bootloader has installed, such as 0x0101 (default 0x0100)"),
        .init(
            name: "--readvertise", valueName: "SECONDS",
            help: "while no central is connected, advertise again this often (for btvirt)"),
        .init(
            name: "--smp-udp", valueName: "PORT",
            help: "mcumgr: serve SMP over UDP on PORT (0: a free one) instead of GATT, one message per datagram, as Zephyr does"),
        .init(name: "--udp-host", valueName: "ADDRESS", help: "with --smp-udp: the local address to listen on (default 127.0.0.1)"),
        .init(
            name: "--smp-pty", help: "mcumgr: serve SMP on a new pseudo-terminal instead of GATT, in Zephyr's serial console framing"),
    ],
    discussion: """
        Prints "ready <address>" on standard output when advertising (with --smp-udp: "ready
        udp:HOST:PORT" when listening); serves until SIGTERM or SIGINT.
        Exit status: 0 after a signal, 1 when serving failed, 2 for bad arguments.
        """,
    program: "ota-peripheral"
)

/// Writes to standard error, unbuffered.
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

/// Exits with status 2 after a usage error, with the help text.
func usageError(_ message: String) -> Never {
    printError("ota-peripheral: error: \(message)\n\n\(spec.help)\n")
    exit(2)
}

/// Exits with status 1 when serving cannot start.
func servingError(_ message: String) -> Never {
    printError("ota-peripheral: error: \(message)\n")
    exit(1)
}

struct Options {
    var protocolName: String
    var parameters = ProtocolParameters()
    var adapter = "hci1"
    var name = "OTA-Test"
    var flashSize = 1 << 20
    var imageOut: String?
    var imageSize: Int?
    var dropLinkAfter: Int?
    var dyingLinkAfter: Int?
    var dyingLinkFor: Duration = .seconds(2)
    var softDevice: UInt16?
    var readvertise: Duration?
    var security = BlueZPeripheral.Security.open
    var passkey: UInt32?
    var smpUDPPort: UInt16?
    var udpHost = "127.0.0.1"
    var smpPTY = false
}

func parseOptions(_ arguments: [String]) -> Options {
    let parsed: ParsedArguments
    do {
        parsed = try ArgumentParser.parse(arguments, for: spec)
    } catch {
        usageError(error.message)
    }
    if parsed.wantsHelp {
        FileHandle.standardOutput.write(Data((spec.help + "\n").utf8))
        exit(0)
    }
    func bytes(_ flag: String) -> Int? {
        guard let text = parsed.value(flag) else { return nil }
        guard let value = Int(text), value >= 0 else { usageError("\(flag) needs a number of bytes, got '\(text)'") }
        return value
    }
    /// A duration in seconds; `0` only when `allowingZero`. Finite and at most a day, so that the
    /// milliseconds it becomes fit.
    func seconds(_ flag: String, allowingZero: Bool) -> Duration? {
        guard let text = parsed.value(flag) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, allowingZero ? seconds >= 0 : seconds > 0, seconds <= 86_400 else {
            usageError("\(flag) needs a number of seconds up to 86400, got '\(text)'")
        }
        return .milliseconds(Int((seconds * 1000).rounded()))
    }
    guard let protocolName = parsed.value("--protocol") else { usageError("--protocol is required") }
    var options = Options(protocolName: protocolName)
    for pair in parsed.values["--param"] ?? [] {
        // Split by scalar, as `ota` does (decision 0056): a combining mark after '=' must not hide it.
        guard let (key, value) = ArgumentParser.splitAtEquals(pair), !key.isEmpty else {
            usageError("--param needs KEY=VALUE, got '\(pair)'")
        }
        options.parameters[key] = value
    }
    options.adapter = parsed.value("--adapter") ?? options.adapter
    options.name = parsed.value("--name") ?? options.name
    options.flashSize = bytes("--flash-size") ?? options.flashSize
    options.imageOut = parsed.value("--image-out")
    options.imageSize = bytes("--image-size")
    options.dropLinkAfter = bytes("--drop-link-after")
    options.dyingLinkAfter = bytes("--dying-link-after")
    options.dyingLinkFor = seconds("--dying-link-for", allowingZero: true) ?? options.dyingLinkFor
    if let text = parsed.value("--softdevice") {
        let digits = text.lowercased().hasPrefix("0x") ? String(text.dropFirst(2)) : text
        guard let fwid = UInt16(digits, radix: 16) else { usageError("--softdevice needs a hexadecimal FWID such as 0x0101, got '\(text)'") }
        guard protocolName == NordicDFUProtocol.name else { usageError("--softdevice applies to --protocol \(NordicDFUProtocol.name)") }
        options.softDevice = fwid
    }
    options.readvertise = seconds("--readvertise", allowingZero: false)
    if let text = parsed.value("--security") {
        guard let security = BlueZPeripheral.Security(rawValue: text) else {
            usageError("--security needs open, encrypted or authenticated, got '\(text)'")
        }
        options.security = security
    }
    if let text = parsed.value("--passkey") {
        guard text.count == 6, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let passkey = UInt32(text) else {
            usageError("--passkey needs six digits, got '\(text)'")
        }
        options.passkey = passkey
    }
    if let text = parsed.value("--smp-udp") {
        guard let port = UInt16(text) else { usageError("--smp-udp needs a UDP port in 0...65535, got '\(text)'") }
        guard protocolName == MCUmgrProtocol.name else { usageError("--smp-udp serves SMP: it applies to --protocol \(MCUmgrProtocol.name)") }
        options.smpUDPPort = port
    }
    options.udpHost = parsed.value("--udp-host") ?? options.udpHost
    if parsed.flag("--smp-pty") {
        guard protocolName == MCUmgrProtocol.name else { usageError("--smp-pty serves SMP: it applies to --protocol \(MCUmgrProtocol.name)") }
        guard options.smpUDPPort == nil else { usageError("--smp-pty and --smp-udp: choose one") }
        options.smpPTY = true
    }
    guard options.flashSize > 0, options.flashSize % NORFlash.defaultSectorSize == 0 else {
        usageError("--flash-size must be a positive multiple of \(NORFlash.defaultSectorSize)")
    }
    if let imageSize = options.imageSize, imageSize > options.flashSize {
        usageError("--image-size \(imageSize) is larger than the \(options.flashSize)-byte flash")
    }
    return options
}

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))
let model: any DeviceModel
do {
    let made = try ToolEnvironment.standard.registry.descriptor(named: options.protocolName).makeDeviceModel(options.parameters)
    if let softDevice = options.softDevice {
        var bootloader = NordicBootloaderModel.Configuration()
        bootloader.installedSoftDevice = softDevice
        model = NordicBootloaderModel(configuration: bootloader)
    } else if options.smpPTY {
        // On a serial line the frame's length and CRC take 4 bytes of each buffer, as on Zephyr.
        let configuration = try MCUmgrConfiguration(parameters: options.parameters)
        var settings = configuration.deviceSettings
        settings.framingOverhead = SMPSerialFraming.bufferOverhead
        model = MCUmgrDeviceModel(settings: settings, profile: configuration.profile)
    } else {
        model = made
    }
} catch {
    usageError(error.message)
}
let flash = NORFlash(capacity: options.flashSize)

/// Writes the first --image-size bytes of flash (all of it without) to --image-out, if given.
func writeImageOut() -> Int32 {
    guard let imageOut = options.imageOut else { return 0 }
    let contents = flash.read(0..<(options.imageSize ?? flash.capacity))
    do {
        try contents.write(to: URL(fileURLWithPath: imageOut))
        printError("ota-peripheral: wrote \(contents.count) bytes of flash to \(imageOut)\n")
        return 0
    } catch {
        printError("ota-peripheral: error: cannot write \(imageOut): \(error)\n")
        return 1
    }
}

/// Waits for `task`, cancelling it on SIGTERM or SIGINT: the tool's own handler, as the default
/// action would kill the process before --image-out is written. `ready`, when given, is printed
/// (`ready <ready>`) once the handler is in place, so that a signal sent on seeing it is handled.
func untilSignalled<Success: Sendable>(_ task: Task<Success, any Error>, ready: String? = nil) async -> Result<Success, any Error> {
    let interrupt = InterruptHandler(signals: [SIGTERM, SIGINT]) { signalNumber in
        printError("ota-peripheral: signal \(signalNumber), stopping\n")
        task.cancel()
    }
    if let ready { FileHandle.standardOutput.write(Data("ready \(ready)\n".utf8)) }
    let outcome = await task.result
    interrupt.cancel()
    return outcome
}

/// Prints `ready <ready>` and serves until SIGTERM or SIGINT, then stops `stop` and writes
/// --image-out.
///
/// The closures are escaping: Swift 6.3.1's release build crashed (an ownership-verifier failure,
/// "Found outside of lifetime use") on non-escaping closures capturing a local passed to this
/// `Never`-returning function.
func serveUntilSignalled(ready: String, stop: @escaping @Sendable () -> Void, statistics: @escaping @Sendable () -> String) async -> Never {
    // Sleeps until cancelled: the sleep then throws, which ends the task.
    let clock = RealTimeClock()
    _ = await untilSignalled(Task { while true { try await clock.sleep(for: .seconds(3600)) } }, ready: ready)
    stop()
    printError("ota-peripheral: stats \(statistics())\n")
    exit(writeImageOut())
}

/// SMP on a serial line without hardware: a pseudo-terminal whose other side a client opens.
func servePseudoTerminal() async -> Never {
    let terminal: PseudoTerminal
    do {
        terminal = try PseudoTerminal.open()
    } catch {
        servingError(error.message)
    }
    let path = terminal.path
    let server = SerialDeviceServer(
        model: model, characteristic: MCUmgrGATTProfile().smp, flash: flash, descriptor: terminal.controller, framing: MCUmgrSerial.framing)
    server.start()
    await serveUntilSignalled(ready: "serial:\(path)", stop: server.stop, statistics: { "serial \(path)" })
}

if options.smpPTY { await servePseudoTerminal() }

/// SMP over UDP: no Bluetooth at all (third-party clients such as smpclient talk to it).
func serveUDP(port: UInt16) async -> Never {
    let server: UDPDeviceServer
    do {
        server = try UDPDeviceServer(
            model: model, characteristic: MCUmgrGATTProfile().smp, flash: flash, host: options.udpHost, port: port,
            packetLength: SMPHeader.messageLength(of:), log: { printError("ota-peripheral: \($0)\n") })
    } catch {
        servingError(error.message)
    }
    server.start()
    let host = options.udpHost.contains(":") ? "[\(options.udpHost)]" : options.udpHost
    await serveUntilSignalled(
        ready: "udp:\(host):\(server.port)",
        stop: server.stop,
        statistics: {
            let statistics = server.statistics
            return "requests=\(statistics.requests) responses=\(statistics.responses) reboots=\(statistics.reboots)"
        })
}

if let port = options.smpUDPPort { await serveUDP(port: port) }
let configuration = {
    var configuration = BlueZPeripheral.Configuration(
        adapter: options.adapter,
        localName: options.name,
        flash: flash,
        dropLinkAfterDataBytes: options.dropLinkAfter,
        readvertiseInterval: options.readvertise,
        log: { printError("ota-peripheral: \($0)\n") }
    )
    configuration.dyingLinkAfterDataBytes = options.dyingLinkAfter
    configuration.security = options.security
    configuration.passkey = options.passkey
    configuration.dyingLinkDuration = options.dyingLinkFor
    return configuration
}()
let peripheralBox = PeripheralBox()

/// Keeps the running peripheral for the statistics printed at exit.
final class PeripheralBox: @unchecked Sendable {
    // @unchecked: `value` is guarded by `lock`.
    private let lock = NSLock()
    private var stored: BlueZPeripheral?
    var value: BlueZPeripheral? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

let outcome = await untilSignalled(
    Task {
        try await BlueZPeripheral.serve(model: model, configuration: configuration) { peripheral in
            peripheralBox.value = peripheral
            FileHandle.standardOutput.write(Data("ready \(peripheral.address)\n".utf8))
        }
    })
var status: Int32 = 0
if case .failure(let error) = outcome {
    printError("ota-peripheral: error: \(error)\n")
    status = 1
}
if let statistics = peripheralBox.value?.statistics {
    printError(
        "ota-peripheral: stats connections=\(statistics.connections) disconnections=\(statistics.disconnections) "
            + "writes=\(statistics.writes) dataBytes=\(statistics.dataBytes) discardedWrites=\(statistics.discardedWrites) "
            + "notifications=\(statistics.notifications) reboots=\(statistics.reboots) "
            + "disconnectsRequested=\(statistics.disconnectsRequested)\n")
}
if writeImageOut() != 0 { status = 1 }
exit(status)
#else
// BlueZ is Linux's Bluetooth stack: elsewhere there is nothing to serve through.
import Foundation

FileHandle.standardError.write(Data("ota-peripheral: error: serving a GATT peripheral needs BlueZ, on Linux\n".utf8))
exit(1)
#endif
