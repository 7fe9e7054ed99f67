import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportSerial
import Testing

/// SMP's serial framing (Zephyr's console transport) and the serial transport over a
/// pseudo-terminal, the MCUmgr device model served on its other side.
@Suite("SMP over serial")
struct SerialTransportTests {
    static let smp = MCUmgrGATTProfile().smp

    static let framing = framing(overhead: SMPSerialFraming.bufferOverhead)

    /// SMP's serial framing, telling the link it takes `overhead` bytes of each device buffer.
    static func framing(overhead: Int) -> SerialFraming {
        SerialFraming(
            packetLength: SMPHeader.messageLength(of:), encode: { SMPSerialFraming.encode($0) },
            makeDecoder: {
                let decoder = SMPSerialStreamDecoder()
                return { decoder.messages(from: $0) }
            }, bufferOverhead: overhead)
    }

    /// A device model as Zephyr serves SMP on a serial line: the frame's length and CRC take 4
    /// bytes of each buffer.
    static func serialModel(bufferSize: Int) -> MCUmgrDeviceModel {
        var settings = MCUmgrDeviceModel.Settings(bufferSize: bufferSize, bufferCount: 4)
        settings.framingOverhead = SMPSerialFraming.bufferOverhead
        return MCUmgrDeviceModel(settings: settings)
    }

    @Test("the framing matches smpclient's published examples, line by line")
    func smpclientVectors() {
        // From smp.packet.encode's documentation (smp 4.2.0, PyPI).
        let hello = Data("Hello, world!".utf8)
        #expect(SMPSerialFraming.encode(hello) == Data([0x06, 0x09]) + Data("AA9IZWxsbywgd29ybGQhet4=\n".utf8))
        let split = SMPSerialFraming.encode(hello, lineLength: 8)
        let expected = ["AA9I", "ZWxs", "bywg", "d29y", "bGQh", "et4="].enumerated().map { index, text in
            Data(index == 0 ? [0x06, 0x09] : [0x04, 0x14]) + Data((text + "\n").utf8)
        }
        #expect(split == expected.reduce(Data(), +))
        #expect(SMPSerialFraming.crc16(Data("123456789".utf8)) == 0x31C3)  // CRC-16/XMODEM's check value

        // smp.packet.decode's example: an image upload request in 15 lines.
        let lines = [
            "06094148344b41414230414147610a", "041441615a6a6247567544574e760a", "04145a6d59594b6d4e7a6147464d0a",
            "041464484a3163335167625755670a", "0414596e4a765a475268644746590a", "04145141414241674d45425159480a",
            "041443416b4b4377774e446738510a", "041445524954464255574678675a0a", "04144768736348523466494345690a",
            "04144979516c4a69636f4b536f720a", "04144c4330754c7a41784d6a4d300a", "04144e5459334f446b364f7a77390a",
            "0414506a396c615731685a3255410a", "04145a3356775a334a685a4758300a", "04147134673d0a",
        ]
        var decoder = SMPSerialDecoder()
        var messages: [Data] = []
        for line in lines {
            let bytes = Data(stride(from: 0, to: line.count, by: 2).map { UInt8(line.dropFirst($0).prefix(2), radix: 16)! })
            messages += decoder.append(bytes).messages
        }
        #expect(messages.count == 1)
        let request = try? MCUmgrRequest(decoding: SMPMessage(decoding: messages[0]))
        guard case .upload(let upload)? = request else {
            Issue.record("not an upload: \(String(describing: request))")
            return
        }
        #expect(upload.offset == 42 && upload.length == 13 && upload.sha == Data("trust me bro".utf8) && upload.data == Data(0..<64))
    }

    @Test("round trip across any split; console lines between frames are skipped; a bad CRC or base64 drops the frame and says so")
    func decoding() {
        let first = MCUmgrRequest.echo(String(repeating: "x", count: 300)).encoded(sequence: 1)
        let second = MCUmgrRequest.readImageState.encoded(sequence: 2)
        let stream =
            Data("*** Booting Zephyr OS ***\r\n".utf8) + SMPSerialFraming.encode(first) + Data("[00:00:01] <inf> log\n".utf8)
            + SMPSerialFraming.encode(second)
        for step in [1, 3, 64, stream.count] {
            var decoder = SMPSerialDecoder()
            var messages: [Data] = []
            for start in stride(from: 0, to: stream.count, by: step) {
                messages += decoder.append(stream[start..<min(start + step, stream.count)]).messages
            }
            #expect(messages == [first, second], "split every \(step)")
        }
        var corrupted = SMPSerialFraming.encode(second)
        corrupted[5] = corrupted[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        var decoder = SMPSerialDecoder()
        let output = decoder.append(corrupted + Data([0x06, 0x09]) + Data("!!!!\n".utf8) + Data([0x04, 0x14]) + Data("AAAA\n".utf8))
        #expect(output.messages.isEmpty)
        #expect(output.errors.count == 3, "\(output.errors)")
        if case .badCRC = output.errors.first {} else { Issue.record("expected a CRC error first: \(output.errors)") }
        #expect(output.errors.dropFirst().first == .badBase64)
        #expect(output.errors.last == .unexpectedContinuation)
        #expect(decoder.append(SMPSerialFraming.encode(second)).messages == [second], "the next frame is read afresh")
    }

    @Test("serial:PATH[@BAUD] parses; a path or rate that is not one says so")
    func addresses() throws {
        #expect(try SerialAddress(parsing: "serial:/dev/ttyACM0") == SerialAddress(path: "/dev/ttyACM0", baud: 115_200))
        #expect(try SerialAddress(parsing: "serial:/dev/ttyUSB1@921600").baud == 921_600)
        #expect(throws: OTAError.self) { try SerialAddress(parsing: "serial:ttyACM0") }
        #expect(throws: OTAError.self) { try SerialAddress(parsing: "serial:/dev/ttyACM0@12345") }
    }

    @Test("an image uploads over a pseudo-terminal byte-identically, pipelined, with test and reset")
    func uploadOverPTY() async throws {
        let pty = try PseudoTerminal.open()
        let model = Self.serialModel(bufferSize: 1024)
        let server = SerialDeviceServer(
            model: model, characteristic: Self.smp, flash: NORFlash(capacity: 256 * 1024), descriptor: pty.controller, framing: Self.framing)
        server.start()
        defer { server.stop() }
        let body = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 5) })
        let image = try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: MCUbootVersion(major: 3, minor: 1, revision: 4)), name: "app.bin")
        let hash = try MCUbootImage(reading: image).hash
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        let client = MCUmgrClient(configuration: configuration)
        let connector = SerialConnector(address: SerialAddress(path: pty.path), characteristic: Self.smp, framing: Self.framing)
        _ = try await UpdateEngine().update(image, using: client, connector: connector)
        #expect(server.flash.read(0..<image.count) == (try image.allBytes()))

        configuration.resetWait = .milliseconds(600)
        let manager = MCUmgrImageManager(configuration: configuration)
        let state = try await UpdateEngine().withConnection(using: client, connector: connector) { context throws(OTAError) in
            _ = try await manager.test(hash: hash, context: context)
            try await manager.reset(context: context)
            return try await manager.list(context: context)
        }
        #expect(state.slot(0)?.hash == hash && state.slot(0)?.confirmed == false, "\(state)")
        #expect(model.isTestBoot)
    }

    @Test("requests leave the serial framing's 4 bytes of the device's buffer: a client that fills it is never answered")
    func requestsLeaveRoomForTheFraming() async throws {
        // Seen on a real Zephyr 4.4.0 server (qemu_cortex_m0, buf_size 384): a 383-byte upload
        // request got no answer, a 380-byte one did.
        let body = Data((0..<6_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
        let image = try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: MCUbootVersion(major: 1, minor: 0, revision: 0)), name: "app.bin")
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        configuration.eraseTimeout = .seconds(1)
        var engine = UpdateEngine()
        engine.configuration.resume.maximumAttempts = 0
        for overhead in [SMPSerialFraming.bufferOverhead, 0] {
            let pty = try PseudoTerminal.open()
            let server = SerialDeviceServer(
                model: Self.serialModel(bufferSize: 384), characteristic: Self.smp, flash: NORFlash(capacity: 64 * 1024),
                descriptor: pty.controller, framing: Self.framing)
            server.start()
            defer { server.stop() }
            let connector = SerialConnector(
                address: SerialAddress(path: pty.path), characteristic: Self.smp, framing: Self.framing(overhead: overhead))
            if overhead > 0 {
                _ = try await engine.update(image, using: MCUmgrClient(configuration: configuration), connector: connector)
                #expect(server.flash.read(0..<image.count) == (try image.allBytes()))
            } else {
                let error = await #expect(throws: OTAError.self) {
                    try await engine.update(image, using: MCUmgrClient(configuration: configuration), connector: connector)
                }
                #expect(error?.code == .timeout, "\(String(describing: error))")
            }
        }
    }
}
