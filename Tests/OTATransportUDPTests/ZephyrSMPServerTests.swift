import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportSerial
import OTATransportUDP
import Testing

/// Our client against a real Zephyr SMP server over UDP, when `OTA_ZEPHYR_SMP_UDP=HOST:PORT`
/// names one, or on a serial line (Zephyr's console framing), when `OTA_ZEPHYR_SMP_SERIAL=PATH`
/// does (docs/protocols/mcumgr.md says how to run Zephyr's `smp_svr` on native_sim, or under QEMU
/// with MCUboot and the image group); skipped
/// otherwise. OS group: echo and MCUmgr parameters. Image group: when the server has it,
/// an image upload into slot 1 checked by image state; a server built without it (the published
/// native_sim UDP builds) must answer image state with `rc 8`, unless `OTA_ZEPHYR_SMP_IMG=1`
/// says it has the group, which then fails the test.
@Suite("A real Zephyr SMP server over UDP or serial")
struct ZephyrSMPServerTests {
    static let target = ProcessInfo.processInfo.environment["OTA_ZEPHYR_SMP_UDP"]
    static let serialTarget = ProcessInfo.processInfo.environment["OTA_ZEPHYR_SMP_SERIAL"]
    static let requiresImageGroup = ProcessInfo.processInfo.environment["OTA_ZEPHYR_SMP_IMG"] == "1"
    static let smp = MCUmgrGATTProfile().smp

    static func connector() throws -> any Connector {
        if let serialTarget {
            return SerialConnector(
                address: try SerialAddress(parsing: "serial:" + serialTarget), characteristic: smp,
                framing: SerialFraming(
                    packetLength: SMPHeader.messageLength(of:), encode: { SMPSerialFraming.encode($0) },
                    makeDecoder: {
                        let decoder = SMPSerialStreamDecoder()
                        return { decoder.messages(from: $0) }
                    }, bufferOverhead: SMPSerialFraming.bufferOverhead))
        }
        let address = try UDPAddress(parsing: "udp:" + (target ?? ""))
        return UDPConnector(
            address: address, characteristic: smp, maximumWrite: UDPTransportProvider.maximumWriteLength, packetLength: SMPHeader.messageLength(of:))
    }

    static var engine: UpdateEngine {
        var configuration = UpdateConfiguration()
        configuration.responseTimeout = .seconds(5)
        configuration.resume.maximumAttempts = 0
        return UpdateEngine(configuration: configuration)
    }

    @Test(
        "echo, MCUmgr parameters and image state (or upload) against Zephyr",
        .enabled(
            if: target != nil || serialTarget != nil,
            "set OTA_ZEPHYR_SMP_UDP=HOST:PORT or OTA_ZEPHYR_SMP_SERIAL=PATH to a Zephyr SMP server"))
    func zephyr() async throws {
        let connector = try Self.connector()
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        let client = MCUmgrClient(configuration: configuration)
        let manager = MCUmgrImageManager(configuration: configuration)
        let (echo, parameters) = try await Self.engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            (try await manager.echo("swift-ble-ota", context: context), try await manager.parameters(context: context))
        }
        #expect(echo == "swift-ble-ota")
        // A message of two serial lines each way (a continuation line), within buf_size and the
        // two line buffers Zephyr's UART transport has by default (more lines are dropped there).
        let long = String(repeating: "0123456789", count: min(12, (parameters.bufferSize - 40) / 10))
        let longEcho = try await Self.engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            try await manager.echo(long, context: context)
        }
        #expect(longEcho == long)
        #expect(parameters.bufferSize >= 64 && parameters.bufferCount >= 1)
        print("zephyr: echo ok; buf_size \(parameters.bufferSize), buf_count \(parameters.bufferCount)")

        let state: ImageStateResponse
        do throws(OTAError) {
            state = try await Self.engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
                try await manager.list(context: context)
            }
        } catch {
            #expect(!Self.requiresImageGroup, "OTA_ZEPHYR_SMP_IMG=1 but: \(error.message)")
            #expect(error.code == .deviceRejected && error.message == "device rejected image state read: rc 8 (not supported)", "\(error.message)")
            print("zephyr: no image management group on this server: \(error.message)")
            return
        }
        print("zephyr: image state: \(state)")
        let body = Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        let image = try FirmwareImage(
            bytes: MCUbootImageWriter.unsigned(body: body, version: MCUbootVersion(major: 9, minor: 9, revision: 9)), name: "zephyr-test.bin")
        let mcuboot = try MCUbootImage(reading: image)
        _ = try await Self.engine.update(image, using: client, connector: connector)
        let after = try await Self.engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            try await manager.list(context: context)
        }
        #expect(after.slot(1)?.hash == mcuboot.hash, "\(after)")
    }
}
