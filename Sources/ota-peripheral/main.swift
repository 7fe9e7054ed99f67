// ota-peripheral: serves a protocol's device model as a real GATT peripheral through BlueZ, for
// the real-stack tests (Tests/RealStack/run-tests.sh) and demos.
//
//   ota-peripheral --protocol NAME [--param KEY=VALUE]... [--adapter hci1] [--name OTA-Test]
//                  [--flash-size BYTES] [--image-out PATH] [--image-size BYTES]
//                  [--drop-link-after BYTES] [--readvertise SECONDS]
//
// Prints `ready <adapter address>` on standard output once the GATT application and the
// advertisement are registered, then serves until SIGTERM or SIGINT. On the way out it unregisters
// both and, with --image-out, writes the first --image-size bytes of the device's flash (the whole
// flash without --image-size) to PATH, so that a test can compare them with the image it sent.
// Diagnostics and a final `stats ...` line go to standard error.
//
// Exit status: 0 after a signal, 1 when serving failed, 2 for bad arguments.
#if os(Linux)
import Foundation
import OTACommandLine
import OTACore
import OTATransportBlueZ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: ota-peripheral --protocol NAME [--param KEY=VALUE]... [--adapter hci1] [--name OTA-Test]
                          [--flash-size BYTES] [--image-out PATH] [--image-size BYTES]
                          [--drop-link-after BYTES] [--readvertise SECONDS]

      --protocol NAME          the device model to serve (ota protocols lists them)
      --param KEY=VALUE        a protocol parameter, as for ota update (repeatable)
      --adapter NAME           the BlueZ adapter that plays the peripheral (default hci1)
      --name TEXT              the advertised local name (default OTA-Test)
      --flash-size BYTES       the device's flash, whole 4 KiB sectors (default 1048576)
      --image-out PATH         on SIGTERM/SIGINT, write the device's flash to PATH
      --image-size BYTES       write only the first BYTES bytes of flash to --image-out
      --drop-link-after BYTES  disconnect the central once BYTES bytes of data (writes without
                               response) arrived, once, as if the link had been lost
      --readvertise SECONDS    while no central is connected, advertise again this often: for
                               emulated controllers (btvirt) that report an advertisement only
                               when it starts

    Prints "ready <address>" on standard output when advertising; serves until SIGTERM or SIGINT.

    """

/// Writes to standard error, unbuffered.
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

/// Exits with status 2 after a usage error.
func usageError(_ message: String) -> Never {
    printError("ota-peripheral: \(message)\n\(usage)")
    exit(2)
}

struct Options {
    var protocolName: String?
    var parameters = ProtocolParameters()
    var adapter = "hci1"
    var name = "OTA-Test"
    var flashSize = 1 << 20
    var imageOut: String?
    var imageSize: Int?
    var dropLinkAfter: Int?
    var readvertise: Duration?
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var remaining = arguments[...]
    func integer(_ text: String, _ flag: String) -> Int {
        guard let value = Int(text), value >= 0 else { usageError("\(flag) needs a number of bytes, got '\(text)'") }
        return value
    }
    while let argument = remaining.popFirst() {
        if argument == "-h" || argument == "--help" {
            FileHandle.standardOutput.write(Data(usage.utf8))
            exit(0)
        }
        // --flag value, or --flag=value
        var flag = argument
        var inlineValue: String?
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            flag = String(argument[..<equals])
            inlineValue = String(argument[argument.index(after: equals)...])
        }
        func value() -> String {
            if let inlineValue { return inlineValue }
            guard let next = remaining.popFirst() else { usageError("\(flag) needs a value") }
            return next
        }
        switch flag {
        case "--protocol": options.protocolName = value()
        case "--param":
            let pair = value()
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                usageError("--param needs KEY=VALUE, got '\(pair)'")
            }
            options.parameters[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        case "--adapter": options.adapter = value()
        case "--name": options.name = value()
        case "--flash-size": options.flashSize = integer(value(), flag)
        case "--image-out": options.imageOut = value()
        case "--image-size": options.imageSize = integer(value(), flag)
        case "--drop-link-after": options.dropLinkAfter = integer(value(), flag)
        case "--readvertise":
            let text = value()
            guard let seconds = Double(text), seconds > 0 else { usageError("--readvertise needs a number of seconds, got '\(text)'") }
            options.readvertise = .milliseconds(Int((seconds * 1000).rounded()))
        default: usageError("unknown argument '\(argument)'")
        }
    }
    guard options.protocolName != nil else { usageError("--protocol is required") }
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
    model = try ToolEnvironment.standard.registry.descriptor(named: options.protocolName!).makeDeviceModel(options.parameters)
} catch {
    usageError(error.message)
}
let flash = NORFlash(capacity: options.flashSize)
let configuration = BlueZPeripheral.Configuration(
    adapter: options.adapter,
    localName: options.name,
    flash: flash,
    dropLinkAfterDataBytes: options.dropLinkAfter,
    readvertiseInterval: options.readvertise,
    log: { printError("ota-peripheral: \($0)\n") }
)
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

let serving = Task {
    try await BlueZPeripheral.serve(model: model, configuration: configuration) { peripheral in
        peripheralBox.value = peripheral
        FileHandle.standardOutput.write(Data("ready \(peripheral.address)\n".utf8))
    }
}

// SIGTERM and SIGINT stop serving; the default action would kill the process before the image is
// written.
var signalSources: [any DispatchSourceSignal] = []
for signalNumber in [SIGTERM, SIGINT] {
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
    source.setEventHandler {
        printError("ota-peripheral: signal \(signalNumber), stopping\n")
        serving.cancel()
    }
    source.resume()
    signalSources.append(source)
}

let outcome = await serving.result
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
if let imageOut = options.imageOut {
    let contents = flash.read(0..<(options.imageSize ?? flash.capacity))
    do {
        try contents.write(to: URL(fileURLWithPath: imageOut))
        printError("ota-peripheral: wrote \(contents.count) bytes of flash to \(imageOut)\n")
    } catch {
        printError("ota-peripheral: error: cannot write \(imageOut): \(error)\n")
        status = 1
    }
}
exit(status)
#else
// BlueZ is Linux's Bluetooth stack: elsewhere there is nothing to serve through.
import Foundation

FileHandle.standardError.write(Data("ota-peripheral: error: serving a GATT peripheral needs BlueZ, on Linux\n".utf8))
exit(1)
#endif
