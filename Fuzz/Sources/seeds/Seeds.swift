import Foundation
import OTACore
import OTAProtocolEspressif
import OTAProtocolFramed
import OTAProtocolGeneric
import OTAProtocolMCUmgr
import OTAProtocolNordicDFU
import OTATransportSimulator
import Synchronization

/// Writes the wire seeds of Corpus/: real messages made by the encoders the clients and device
/// models use (`Fuzz/make-corpus.sh` runs it; the file seeds come from the test fixtures).
@main
enum Seeds {
    static func main() throws {
        let corpus = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? "Corpus")
        var seeds: [String: [(String, Data)]] = [:]

        seeds["generic-wire"] = [
            ("start", GenericCommand.start(size: 4096, crc: 0x1234_5678).encoded),
            ("commit", GenericCommand.commit(crc: 0xDEAD_BEEF).encoded),
            ("abort", GenericCommand.abort.encoded),
            ("start-ok", GenericReply.start(.ok).encoded),
            ("commit-crc", GenericReply.commit(.crcMismatch).encoded),
        ]

        // A status read as a device sends it (version 1, receiving, offset 480, running CRC 7,
        // image size, image CRC, image version, batch 16); its identity starts the begin command.
        var statusBytes = ByteWriter(capacity: 24)
        statusBytes.u8(FramedCommand.protocolVersion)
        statusBytes.u8(FramedSessionState.receiving.rawValue)
        for value: UInt32 in [480, 7, 65_536, 0xCAFE_F00D, 3] { statusBytes.u32(value) }
        statusBytes.u16(16)
        guard let status = FramedDeviceStatus(decoding: statusBytes.data) else { fatalError("the status seed does not decode") }
        let identity = status.identity
        seeds["framed-wire"] = [
            ("begin", FramedCommand.begin(identity, batch: 8, version: FramedCommand.protocolVersion).encoded),
            ("commit", FramedCommand.commit.encoded),
            ("abort", FramedCommand.abort.encoded),
            ("chunk", FramedChunk.encode(offset: 240, payload: Data((0..<20).map { UInt8($0) }))),
            ("compact-chunk", FramedChunk.encodeCompact(sequence: 3, payload: Data((0..<14).map { UInt8($0) }), batchCRC: 0x0D4A_1185)),
            ("begin-reply", FramedNotification.beginReply(.ok, state: .receiving, offset: 480, batch: 8).encoded),
            ("commit-reply", FramedNotification.commitReply(.crcMismatch).encoded),
            ("abort-reply", FramedNotification.abortReply(.ok).encoded),
            ("ack", FramedNotification.ack(offset: 960, runningCRC: 0x0102_0304).encoded),
            ("nak", FramedNotification.nak(.gap, offset: 960, runningCRC: 0x0102_0304).encoded),
            ("status", status.encoded),
        ]

        seeds["nordic-wire"] = [
            ("create-command", DFURequest.create(.command, size: 141).encoded),
            ("create-data", DFURequest.create(.data, size: 4096).encoded),
            ("set-prn", DFURequest.setPRN(12).encoded),
            ("checksum", DFURequest.calculateChecksum.encoded),
            ("execute", DFURequest.execute.encoded),
            ("select-data", DFURequest.select(.data).encoded),
            ("abort", DFURequest.abort.encoded),
            ("select-reply", DFUResponse.success(.select, [4096, 0, 0]).encoded),
            ("checksum-reply", DFUResponse.success(.calculateChecksum, [4096, 0xA1B2_C3D4]).encoded),
            ("execute-reply", DFUResponse.success(.execute).encoded),
            (
                "extended-error",
                DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .init(rawValue: 0x0B), extendedError: .initCommandInvalid).encoded
            ),
            ("enter-bootloader", ButtonlessRequest.enterBootloader.encoded),
            ("set-name", ButtonlessRequest.setAdvertisingName("DfuTarg").encoded),
        ]

        let imageState: CBOR = .textMap([
            "images": .array([
                .textMap([
                    "slot": .integer(0), "version": .text("1.2.3"), "hash": .bytes(Data(repeating: 0xAB, count: 32)),
                    "bootable": .bool(true), "active": .bool(true), "confirmed": .bool(true),
                ])
            ]),
            "splitStatus": .integer(0),
        ])
        let upload: CBOR = .textMap([
            "off": .integer(0), "data": .bytes(Data((0..<64).map { UInt8($0) })), "len": .integer(65_536),
            "sha": .bytes(Data(repeating: 0x5A, count: 32)), "upgrade": .bool(false),
        ])
        let odd: CBOR = .array([
            .negative(41), .null, .undefined, .float(1.5), .tagged(24, .bytes(Data([0xA0]))), .unsigned(UInt64.max),
        ])
        var indefinite = Data([0xBF, 0x63]) + Data("off".utf8) + Data([0x19, 0x01, 0x00])
        indefinite += Data([0x62]) + Data("rc".utf8) + Data([0x00, 0xFF])
        seeds["cbor"] = [
            ("image-state", imageState.encoded), ("upload", upload.encoded), ("odd", odd.encoded),
            ("indefinite-map", indefinite), ("rc", CBOR.textMap(["rc": .integer(0), "off": .integer(4096)]).encoded),
        ]

        let stateRead = SMPMessage(operation: .read, group: 1, command: 0, sequence: 1, payload: .textMap([:]))
        let stateReply = SMPMessage(operation: .readResponse, group: 1, command: 0, sequence: 1, payload: imageState)
        let uploadWrite = SMPMessage(operation: .write, group: 1, command: 1, sequence: 2, payload: upload)
        let uploadReply = SMPMessage(
            operation: .writeResponse, group: 1, command: 1, sequence: 2, payload: .textMap(["rc": .integer(0), "off": .integer(64)])
        )
        // The SMP target's first byte picks the fragment size for the reassembler.
        seeds["smp"] = [
            ("state-read", Data([19]) + stateRead.encoded),
            ("state-reply", Data([19]) + stateReply.encoded),
            ("upload-write", Data([60]) + uploadWrite.encoded),
            ("two-replies", Data([7]) + uploadReply.encoded + stateReply.encoded),
        ]

        // Serial lines: the first byte picks the piece size; console output between frames.
        seeds["smp-serial"] = [
            ("state-read", Data([7]) + SMPSerialFraming.encode(stateRead.encoded)),
            ("upload-write", Data([60]) + SMPSerialFraming.encode(uploadWrite.encoded, lineLength: 40)),
            ("console-and-reply", Data([127]) + Data("*** Booting Zephyr OS ***\r\n".utf8) + SMPSerialFraming.encode(stateReply.encoded)),
        ]

        // Manufacturer, model, hardware revision, firmware revision, battery level; 0xFF between.
        func information(_ fields: [Data]) -> Data { Data(fields.joined(separator: [0xFF])) }
        seeds["device-information"] = [
            ("thermo", information([Data("Acme\0".utf8), Data("Thermo-42".utf8), Data("rev-c ".utf8), Data("1.4.2".utf8), Data([84])])),
            ("low-battery", information([Data("Nordic Semiconductor".utf8), Data("nRF52840".utf8), Data("B2".utf8), Data("0.9".utf8), Data([12])])),
            ("escapes", information([Data("\u{1B}[31mred".utf8), Data(repeating: 0x41, count: 100), Data(), Data([0xC3, 0x28]), Data([101])])),
        ]

        seeds["espressif-wire"] = [
            ("start", EspressifCommand.start(length: 65_536).encoded),
            ("stop", EspressifCommand.stop.encoded),
            ("start-ack", EspressifCommandAck(commandID: 0x0001, status: 0).encoded),
            ("sector-ack", EspressifSectorAck(sector: 3, status: .crcError, expected: 3).encoded),
            ("packet", EspressifFirmwarePacket(sector: 0, sequence: 0xFF, payload: Data((0..<32).map { UInt8($0) })).encoded),
        ]

        seeds["sim-journal"] = simulatedDeviceJournals()
        seeds["sim-device-state"] = simulatedDeviceStates(upload: upload)

        for (target, files) in seeds {
            let folder = corpus.appendingPathComponent(target)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (name, data) in files {
                try data.write(to: folder.appendingPathComponent("\(name).bin"))
            }
        }
    }

    /// Journals as keeps append them (two groups of sectors and states), one torn by a kill, and
    /// a count of received bytes.
    static func simulatedDeviceJournals() -> [(String, Data)] {
        let first = SimulatedDeviceJournal.group([
            .init(kind: .sector, index: 0, bytes: Data(repeating: 0x11, count: 64)),
            .init(kind: .state, bytes: Data("MCUmgr-model-1\n".utf8) + Data([1, 0, 0, 0, 0, 2, 0xAA])),
        ])
        let second = SimulatedDeviceJournal.group([
            .init(kind: .sector, index: 3, bytes: Data(repeating: 0x33, count: 64)),
            .init(kind: .sector, index: 0, bytes: Data(repeating: 0x22, count: 64)),
            .init(kind: .running, bytes: Data("NordicDFU-progress-1\n".utf8) + Data(repeating: 0, count: 33)),
        ])
        return [
            ("one-group", first), ("two-groups", first + second), ("torn", first + second.prefix(second.count / 2)),
            ("received", SimulatedDeviceJournal.receivedCount(70_000)),
            // A flash file (decision 0081) for the target's slot of 16 sectors of 64 bytes.
            (
                "flash-file",
                SimulatedDeviceJournal.group([
                    .init(kind: .sector, index: 0, bytes: Data(repeating: 0x44, count: 64)),
                    .init(kind: .sector, index: 15, bytes: Data(repeating: 0x55, count: 64)),
                ])
            ),
        ]
    }

    /// The sim-device-state target's input: which state, its length, the state, then writes
    /// (a byte choosing the characteristic, a length byte, the value).
    static func deviceStateInput(_ kind: UInt8, state: Data, writes: [(UInt8, Data)]) -> Data {
        var input = ByteWriter()
        input.u8(kind)
        input.u16(UInt16(state.count))
        input.bytes(state)
        for (choice, value) in writes {
            for start in stride(from: 0, to: max(value.count, 1), by: 255) {
                let piece = value.dropFirst(start).prefix(255)
                input.u8(choice)
                input.u8(UInt8(piece.count))
                input.bytes(piece)
            }
        }
        return input.data
    }

    /// States the models wrote in the middle of real updates, and the requests that go on from them.
    static func simulatedDeviceStates(upload: CBOR) -> [(String, Data)] {
        let peripheral = SeedPeripheral()
        let factory = MCUbootImageWriter.unsigned(body: Data(repeating: 0x5A, count: 200), version: MCUbootVersion(major: 1, minor: 0, revision: 0))
        let mcumgr = MCUmgrDeviceModel(settings: .init(factoryImage: factory))
        mcumgr.connected(peripheral)
        let uploadWrite = SMPMessage(operation: .write, group: 1, command: 1, sequence: 2, payload: upload).encoded
        _ = mcumgr.write(uploadWrite, to: mcumgr.profile.smp, kind: .withoutResponse, peripheral: peripheral)
        let next = MCUmgrRequest.upload(ImageUploadRequest(offset: 64, data: Data(repeating: 0x77, count: 100))).message(sequence: 3).encoded
        let stateRead = MCUmgrRequest.readImageState.message(sequence: 4).encoded

        let nordic = NordicBootloaderModel()
        nordic.connected(peripheral)
        let control = DFUGATTProfile.controlPoint
        for request in [DFURequest.setPRN(0), .create(.command, size: 32)] {
            _ = nordic.write(request.encoded, to: control, kind: .withResponse, peripheral: peripheral)
        }
        _ = nordic.write(Data(repeating: 0x08, count: 16), to: DFUGATTProfile.packet, kind: .withoutResponse, peripheral: peripheral)
        // A data object half written after two executed ones (made by hand: the command object
        // would need a signed init packet).
        var data = ByteWriter()
        data.bytes(Data("NordicDFU-progress-1\n".utf8))
        data.u8(DFUObjectType.data.rawValue)
        for value: UInt32 in [141, 10_240, 0x1234_5678, 8192, 0x9ABC_DEF0, 4097, 12, 0] { data.u32(value) }
        let nordicRequests: [(UInt8, Data)] = [
            (0, DFURequest.select(.data).encoded), (1, Data(repeating: 0x44, count: 200)), (0, DFURequest.calculateChecksum.encoded),
            (0, DFURequest.execute.encoded), (0, DFURequest.create(.data, size: 4096).encoded),
        ]
        return [
            ("mcumgr-state", deviceStateInput(0, state: mcumgr.persistentState, writes: [(0, stateRead)])),
            ("mcumgr-upload", deviceStateInput(1, state: mcumgr.runningState, writes: [(0, next), (0, stateRead)])),
            (
                "nordic-command",
                deviceStateInput(
                    2, state: nordic.runningState,
                    writes: [(1, Data(repeating: 0x08, count: 16)), (0, DFURequest.calculateChecksum.encoded), (0, DFURequest.execute.encoded)])
            ),
            ("nordic-data", deviceStateInput(2, state: data.data, writes: nordicRequests)),
        ]
    }
}

/// The host the seeds' models run on: 64 KiB of flash, notifications on.
final class SeedPeripheral: PeripheralContext {
    let flash: any FlashStorage = NORFlash(capacity: 64 * 1024)
    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }
    func notify(_ value: Data, on characteristic: CharacteristicID) {}
    func reboot(after delay: Duration) {}
}
