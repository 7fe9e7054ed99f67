import Foundation
import OTACore
import OTAProtocolMCUmgr
import OTATransportUDP
import Testing

/// SMP over UDP on the loopback interface: our client through ``UDPConnector``'s transport against the MCUmgr
/// device model served by ``UDPDeviceServer``, one SMP message per datagram either way.
@Suite("SMP over UDP")
struct UDPTransportTests {
    static let smp = MCUmgrGATTProfile().smp

    /// A server of a fresh MCUmgr device model on a free loopback port.
    static func server(bufferSize: Int = 2475, flashSize: Int = 512 * 1024) throws -> (UDPDeviceServer, MCUmgrDeviceModel) {
        let model = MCUmgrDeviceModel(settings: .init(bufferSize: bufferSize, bufferCount: 4))
        let server = try UDPDeviceServer(
            model: model, characteristic: smp, flash: NORFlash(capacity: flashSize), host: "127.0.0.1", port: 0,
            packetLength: SMPHeader.messageLength(of:))
        server.start()
        return (server, model)
    }

    static func connector(port: UInt16) -> UDPConnector {
        UDPConnector(
            address: UDPAddress(host: "127.0.0.1", port: port), characteristic: smp, maximumWrite: UDPTransportProvider.maximumWriteLength,
            packetLength: SMPHeader.messageLength(of:))
    }

    static func image(bytes count: Int, version: MCUbootVersion = MCUbootVersion(major: 2, minor: 0, revision: 0)) throws -> FirmwareImage {
        let body = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })
        return try FirmwareImage(bytes: MCUbootImageWriter.unsigned(body: body, version: version), name: "app.signed.bin")
    }

    @Test("udp:HOST[:PORT] parses hosts, bracketed IPv6 and ports, default 1337; malformed ones say why")
    func addresses() throws {
        #expect(try UDPAddress(parsing: "udp:192.0.2.7") == UDPAddress(host: "192.0.2.7", port: 1337))
        #expect(try UDPAddress(parsing: "udp:zephyr.local:9000") == UDPAddress(host: "zephyr.local", port: 9000))
        #expect(try UDPAddress(parsing: "udp:[::1]:1400") == UDPAddress(host: "::1", port: 1400))
        #expect(try UDPAddress(parsing: "udp:[fe80::1]").description == "udp:[fe80::1]:1337")
        for (text, words) in [
            ("udp:", "names no host"), ("udp:host:0", "is not a number in 1...65535"), ("udp:host:99999", "is not a number"),
            ("udp:::1", "brackets"), ("udp:[::1", "closing ']'"), ("udp:[::1]x", "':PORT'"),
        ] {
            let error = #expect(throws: OTAError.self) { try UDPAddress(parsing: text) }
            #expect(error?.code == .invalidParameter)
            #expect(error?.message.contains(words) == true, "\(text): \(error?.message ?? "")")
        }
    }

    @Test("Writes cut anywhere are joined into whole SMP messages, several per write too")
    func assembler() {
        let first = MCUmgrRequest.echo("hello").encoded(sequence: 1)
        let second = MCUmgrRequest.readImageState.encoded(sequence: 2)
        var assembler = PacketAssembler(packetLength: SMPHeader.messageLength(of:))
        let stream = first + second
        #expect(assembler.append(stream.prefix(5)).isEmpty)
        #expect(assembler.append(stream[5..<(first.count + 3)]) == [first])
        #expect(assembler.pending == 3)
        #expect(assembler.append(stream[(first.count + 3)...]) == [second])
        #expect(assembler.append(first + second) == [first, second])
        #expect(assembler.pending == 0)
    }

    @Test("An image uploads pipelined over UDP byte-identically, marked for test, and swaps in at reset")
    func uploadAndTest() async throws {
        let (server, model) = try Self.server()
        defer { server.stop() }
        let image = try Self.image(bytes: 200_000)
        let mcuboot = try MCUbootImage(reading: image)
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        let client = MCUmgrClient(configuration: configuration)
        let connector = Self.connector(port: server.port)
        _ = try await UpdateEngine().update(image, using: client, connector: connector)
        #expect(server.flash.read(0..<image.count) == (try image.allBytes()))
        // Every request went as one datagram and got one answer; a 2475-byte buffer rounded to
        // whole 1472-byte writes takes more requests than the buffer alone would.
        let statistics = server.statistics
        #expect(statistics.requests == statistics.responses)
        #expect(statistics.requests > image.count / 2475)

        let manager = MCUmgrImageManager(configuration: configuration)
        let engine = UpdateEngine()
        let marked = try await engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            try await manager.test(hash: mcuboot.hash, context: context)
        }
        #expect(marked.slot(1)?.pending == true && marked.slot(1)?.hash == mcuboot.hash)
        configuration.resetWait = .milliseconds(600)
        let resetting = MCUmgrImageManager(configuration: configuration)
        _ = try await engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            try await resetting.reset(context: context)
        }
        #expect(server.statistics.reboots == 1)
        let after = try await engine.withConnection(using: client, connector: connector) { context throws(OTAError) in
            try await manager.list(context: context)
        }
        #expect(after.slot(0)?.hash == mcuboot.hash && after.slot(0)?.active == true && after.slot(0)?.confirmed == false)
        #expect(model.isTestBoot)
    }

    @Test("A response larger than the request still goes back as one datagram")
    func oneDatagramPerResponse() async throws {
        let (server, _) = try Self.server()
        defer { server.stop() }
        let transport = try await Self.connector(port: server.port).connect()
        defer { Task { await transport.disconnect() } }
        let notifications = try await transport.notifications(from: Self.smp)
        try await transport.write(MCUmgrRequest.readImageState.encoded(sequence: 9), to: Self.smp, kind: .withoutResponse)
        var iterator = notifications.makeAsyncIterator()
        let datagram = try #require(await iterator.next())
        // The request was 8 bytes and a map; the image list is longer than the model's 20-byte
        // notifications, and arrives whole.
        let message = try SMPMessage(decoding: datagram)
        #expect(message.header.sequence == 9)
        #expect(try ImageStateResponse(payload: message.payload).slot(0)?.active == true)
    }

    @Test("Nothing listening at the address fails with one line naming it, not a hang")
    func nothingListening() async throws {
        // A port that was just free: bind, note it, close.
        let (probe, _) = try Self.server()
        let port = probe.port
        probe.stop()
        try await Task.sleep(for: .milliseconds(300))
        var configuration = MCUmgrConfiguration()
        configuration.mode = .upload
        var engineConfiguration = UpdateConfiguration()
        engineConfiguration.responseTimeout = .seconds(3)
        engineConfiguration.resume.maximumAttempts = 0
        let error = await #expect(throws: OTAError.self) {
            _ = try await UpdateEngine(configuration: engineConfiguration).withConnection(
                using: MCUmgrClient(configuration: configuration), connector: Self.connector(port: port)
            ) { context throws(OTAError) in
                try await MCUmgrImageManager(configuration: configuration).list(context: context)
            }
        }
        #expect(error?.code == .disconnected || error?.code == .timeout)
        #expect(error?.message.contains("image state read") == true, "\(error?.message ?? "")")
    }
}
