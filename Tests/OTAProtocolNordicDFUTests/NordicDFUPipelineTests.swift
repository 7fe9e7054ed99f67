import Foundation
import OTACore
import Testing

@testable import OTAProtocolNordicDFU

/// `pipeline=on` and `prn=auto` without a transport: Execute and the next Create queued behind
/// each object's last packets, answers matched by op code in any order, the fall back to one
/// request at a time, resume mid-pipeline, and the receipt interval that adapts.
@Suite struct NordicDFUPipelineTests {
    typealias Action = NordicDFUStateMachine.Action
    typealias Kit = NordicDFUStateMachineTests

    // MARK: - Step by step

    @Test func eachObjectEndsWithItsExecuteAndTheNextCreateQueuedAndItsReceiptAsChecksum() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        let toFirstObject = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        // prn=auto starts at one receipt per object: 17 packets of 244 bytes hold 4096.
        #expect(toFirstObject.contains(.send(.setPRN(17))))
        #expect(machine.received(.success(.create)) == .sleep(.milliseconds(400), purpose: "waiting for the bootloader to prepare the first object"))
        #expect(machine.delayElapsed() == .streamThenQueue(0..<4096, [.execute, .create(.data, size: 4096)]))
        // The Create answers first (the SDK re-queues an Execute until flash is idle), then the
        // Execute, then the receipt: any order will do.
        #expect(machine.received(.success(.create)) == .listen(awaiting: .answers(to: [.calculateChecksum, .execute]), wait: .response))
        #expect(machine.received(.success(.execute)) == .listen(awaiting: .receipt, wait: .receipt))
        #expect(
            drain(&machine, machine.received(Kit.receipt(image, 4096))) == [
                .acknowledged(4096), .streamThenQueue(4096..<8192, [.execute, .create(.data, size: 1808)]),
            ])
        #expect(machine.received(Kit.receipt(image, 8192)) == .listen(awaiting: .answers(to: [.execute, .create(.data, size: 1808)]), wait: .response))
        #expect(machine.received(.success(.execute)) == .listen(awaiting: .answers(to: [.create(.data, size: 1808)]), wait: .response))
        // The last object is not pipelined: its Execute verifies the image.
        #expect(drain(&machine, machine.received(.success(.create))) == [.acknowledged(8192), .stream(8192..<10_000, receipt: false)])
        #expect(machine.streamed() == .send(.calculateChecksum))
        #expect(
            drain(&machine, machine.received(Kit.receipt(image, 10_000))) == [.enter(.verifying), .send(.execute, wait: .verification)])
        #expect(drain(&machine, machine.received(.success(.execute))) == [.acknowledged(10_000), .finished])
    }

    @Test func withoutAReceiptAtTheObjectsEndCalculateChecksumIsQueuedFirst() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image, prn: "12")
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        #expect(machine.received(Kit.receipt(image, 2928)) == .streamThenQueue(2928..<4096, [.calculateChecksum, .execute, .create(.data, size: 4096)]))
    }

    // MARK: - Whole runs

    @Test(arguments: ["auto", "0", "12", "17"], [false, true])
    func wholeRunsDeliverTheImageWhateverTheOrderOfTheAnswers(prn: String, reversed: Bool) throws {
        let image = try Kit.image(size: 30_000)
        var bootloader = IdealBootloader()
        bootloader.answersQueuedRequestsInReverse = reversed
        let trace = try run(try Self.machine(image, prn: prn), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(bootloader.executed == image.count)
        let queues = trace.filter { if case .streamThenQueue = $0 { true } else { false } }.count
        #expect(queues == 7)  // every object but the last of eight
        if prn == "auto" || prn == "17" {
            // The receipts ended the objects: Calculate Checksum only for the init packet and the short last object.
            #expect(trace.filter { $0 == .send(.calculateChecksum) }.count == 2)
            #expect(!trace.contains { if case .streamThenQueue(_, let requests) = $0 { requests.contains(.calculateChecksum) } else { false } })
        }
    }

    @Test func aPacketLostMidPipelineSendsTheObjectAgainAndLowersTheInterval() throws {
        let image = try Kit.image(size: 30_000)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = [17 + 5]  // a packet of the second object
        var machine = try Self.machine(image)
        let trace = try perform(&machine, machine.start(), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(machine.objectsResent == 1)
        // No receipt (the bootloader counted 16 packets); the Execute was refused as the object
        // is short and the queued Create rewound to its start: asked, found short, sent again.
        #expect(trace.contains(.note("the bootloader refused to execute the object at byte 4096 (0x08): it is short; asking for its offset")))
        #expect(trace.contains(.note("prn=auto: packets were lost; lowering the receipt interval to 8 packets")))
        #expect(trace.contains(.send(.setPRN(8))))
        #expect(zip(trace, trace.dropFirst()).contains { $0 == .send(.setPRN(8)) && $1 == .send(.create(.data, size: 4096)) })
    }

    @Test func aWrongReceiptMidPipelineIsTheChecksumMismatchThatSendsTheObjectAgain() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        #expect(machine.delayElapsed() == .streamThenQueue(0..<4096, [.execute, .create(.data, size: 4096)]))
        // 16 packets arrived, then a later receipt: the Execute is refused (object short).
        _ = machine.received(.success(.calculateChecksum, [3904, 0xBAD]))
        _ = machine.received(DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted))
        #expect(
            drain(&machine, machine.received(.success(.create))) == [
                .note("prn=auto: packets were lost; lowering the receipt interval to 8 packets"),
                .note(
                    "object at byte 0: bootloader reports 3904 bytes with a different CRC; sending the object again in 500 ms with a receipt every 8 packets"),
                .sleep(.milliseconds(500), purpose: "pausing before sending the object at byte 0 again"),
            ])
        #expect(machine.delayElapsed() == .send(.setPRN(8)))
        #expect(machine.received(.success(.setPRN)) == .send(.create(.data, size: 4096)))
        #expect(machine.objectsResent == 1)
    }

    /// A duplicated or reordered write leaves the right number of bytes, not the right bytes:
    /// the queued Execute took the object before its receipt showed it. No Create rewinds past an
    /// executed object, so the machine starts over from the init packet, strictly.
    @Test func anObjectExecutedWithOtherBytesStartsOverFromTheInitPacket() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        _ = machine.delayElapsed()
        _ = machine.received(.success(.calculateChecksum, [4096, 0xBAD]))
        _ = machine.received(.success(.execute))
        let damage =
            "the bootloader executed the object at byte 0 although it reports 4096 bytes with CRC-32 0xBAD (expected 4096 bytes, \(Hex.number(Kit.crc(image, 4096))))"
        #expect(
            drain(&machine, machine.received(.success(.create))) == [
                .note("\(damage); starting over from the init packet, one request at a time"), .send(.create(.command, size: 100)),
            ])
        // And the run completes from there, strictly.
        var bootloader = IdealBootloader()
        _ = bootloader.answer(.select(.command))
        let trace = try perform(&machine, machine.received(bootloader.answer(.create(.command, size: 100))), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(!trace.contains { if case .streamThenQueue = $0 { true } else { false } })
    }

    /// A packet lost in the object before a short last one: the Execute is refused, and the
    /// queued Create of the last object, rewound to the refused one's start, does not fit there
    /// (0x03). Expected: the object is sent again.
    @Test func aQueuedCreateRefusedBehindARefusedExecuteIsNotAFailure() throws {
        let image = try Kit.image(size: 7000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        #expect(machine.delayElapsed() == .streamThenQueue(0..<4096, [.execute, .create(.data, size: 2904)]))
        _ = machine.received(DFUResponse(opCode: DFUOpCode.create.rawValue, result: .invalidParameter))
        #expect(
            drain(&machine, machine.received(DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted))) == [
                .note("the bootloader refused to execute the object at byte 0 (0x08): it is short; asking for its offset"), .send(.calculateChecksum),
            ])
        let next = drain(&machine, machine.received(.success(.calculateChecksum, [3904, 0xBAD])))
        #expect(next.last == .sleep(.milliseconds(500), purpose: "pausing before sending the object at byte 0 again"))
        #expect(machine.delayElapsed() == .send(.setPRN(8)))
        #expect(machine.objectsResent == 1)
    }

    // MARK: - Surprises

    /// A bootloader that took the Create before the Execute (not FIFO) lost the object: its
    /// Execute is refused although every byte arrived. The machine drains the queue, leaves the
    /// pipelined flow, and goes on from what Select says, one request at a time.
    @Test func aRefusedExecuteOfACompleteObjectEndsPipelining() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        _ = machine.delayElapsed()
        _ = machine.received(Kit.receipt(image, 4096))
        _ = machine.received(DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted))
        #expect(
            drain(&machine, machine.received(.success(.create))) == [
                .note(
                    "the bootloader refused to execute the object at byte 0 (0x08) although all its bytes arrived; leaving the pipelined flow and asking the bootloader where it stands"
                ),
                .send(.select(.data)),
            ])
        // Create rewound to the last executed object: start again from there, strictly.
        #expect(
            drain(&machine, machine.received(.success(.select, [4096, 0, 0]))) == [
                .acknowledged(0), .enter(.transferring), .send(.create(.data, size: 4096)),
            ])
        #expect(machine.received(.success(.create)) == .stream(0..<4096, receipt: true))
        #expect(machine.received(Kit.receipt(image, 4096)) == .send(.execute))
        #expect(drain(&machine, machine.received(.success(.execute))) == [.acknowledged(4096), .send(.create(.data, size: 4096))])
    }

    @Test func anAnswerThatWasNotAskedEndsPipeliningOnceTheQueueIsAnswered() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        _ = machine.delayElapsed()
        #expect(
            machine.received(.success(.select, [4096, 0, 0]))
                == .listen(awaiting: .answers(to: [.calculateChecksum, .execute, .create(.data, size: 4096)]), wait: .response))
        _ = machine.received(Kit.receipt(image, 4096))
        _ = machine.received(.success(.execute))
        #expect(
            drain(&machine, machine.received(.success(.create))) == [
                .note("the bootloader answered op code 0x6, which was not asked; leaving the pipelined flow and asking the bootloader where it stands"),
                .send(.select(.data)),
            ])
        // Select says object 0 is executed and held: Execute again (0x08 is fine), then on.
        #expect(drain(&machine, machine.received(.success(.select, [4096, 4096, Kit.crc(image, 4096)]))) == [.acknowledged(4096), .send(.execute)])
    }

    @Test func aRejectedQueuedCreateFailsAsTheStrictFlowWould() throws {
        let image = try Kit.image(size: 10_000)
        var machine = try Self.machine(image)
        _ = try runScript(&machine, machine.start(), until: .send(.create(.data, size: 4096)))
        _ = machine.received(.success(.create))
        _ = machine.delayElapsed()
        _ = machine.received(Kit.receipt(image, 4096))
        _ = machine.received(.success(.execute))
        #expect(
            machine.received(DFUResponse(opCode: DFUOpCode.create.rawValue, result: .invalidObject))
                == .fail(
                    OTAError(
                        .deviceRejected,
                        "bootloader rejected Create data object of 4096 bytes failed: 0x05 (invalid object (init packet malformed or bad signature)); for a data object this means the bootloader could not erase its flash (worn or protected flash?)"
                    )))
    }

    // MARK: - Resume

    /// The link dropped with Execute(n) and Create(n+1) queued: the bootloader handled both, or
    /// neither. Either way the resume point says what to do, and the run completes.
    @Test(arguments: [4096, 8192])
    func resumeAfterADisconnectMidPipelineCompletes(executed: Int) throws {
        let image = try Kit.image(size: 20_000)
        var bootloader = IdealBootloader(holding: image, upTo: 8192, executed: executed)
        let checkpoint = Kit.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 8192, crc: Kit.crc(image, 8192)))
        let trace = try run(try Self.machine(image, resumingFrom: checkpoint), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(trace.contains(.send(.execute)))  // the held object, executed (again)
        #expect(trace.contains { if case .streamThenQueue(let range, _) = $0 { range == 12_288..<16_384 } else { false } })
    }

    // MARK: - prn=auto

    /// Down by half at a loss, up by double after clean objects, never again to an interval
    /// that lost packets (17 did: at most 16).
    @Test func autoRaisesTheIntervalAfterCleanObjectsBelowTheOneThatLostPackets() throws {
        let image = try Kit.image(size: 4096 * 12)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = [3]
        var machine = try Self.machine(image)
        let start = machine.start()
        var trace = try perform(&machine, start, image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(machine.receiptIntervals == [17, 8, 16])
        trace = trace.filter { if case .send(.setPRN, _) = $0 { true } else { false } }
        #expect(trace == [.send(.setPRN(0)), .send(.setPRN(17)), .send(.setPRN(8))])  // the raises ride in the queues
    }

    @Test func autoWithoutPipeliningSetsTheIntervalBeforeTheCreate() throws {
        let image = try Kit.image(size: 4096 * 6)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = [20]
        let trace = try run(try Self.machine(image, pipeline: false), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        let setAndCreate = zip(trace, trace.dropFirst()).contains { $0 == .send(.setPRN(8)) && $1 == .send(.create(.data, size: 4096)) }
        #expect(setAndCreate)
    }

    /// A packet lost in the short last object (8 packets of 10 000 bytes' last 1808) at an
    /// interval of 17: the bootloader counted 8, so the next attempt must go below 8, not below
    /// 17 (which left it at one receipt per object, as before; campaign seed 4207).
    @Test func autoLowersFromThePacketsAShortLastObjectCounted() throws {
        let image = try Kit.image(size: 10_000)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = [17 + 17 + 3]  // the third packet of the last object
        var machine = try Self.machine(image)
        let trace = try perform(&machine, machine.start(), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(machine.receiptIntervals == [17, 4])
        #expect(machine.objectsResent == 1)
        #expect(trace.contains(.send(.setPRN(4))))
    }

    /// Campaign seed 12045 without a transport: 128-byte packets, 32 to an object. A packet lost
    /// in the fourth object halves `prn=auto` to 16 (a receipt at each object's end); it and the
    /// next three arrive whole, which raises the interval to 31, and that Set PRN rides in the
    /// queue behind the eighth object, whose last packet is lost. Its packets were counted at 16,
    /// so no Calculate Checksum was queued and the receipt never comes: the refused Execute must
    /// make the machine ask at once. Judged by the 31 it was announcing, the machine took a
    /// Calculate Checksum for queued and waited the response timeout for its answer on a link
    /// that was up (here: `perform` records an unexpected listen).
    @Test func aRaiseInTheQueueDoesNotMakeAShortObjectWaitForAChecksumNeverAsked() throws {
        let image = try Kit.image(size: 39_921)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = Self.seed12045Drops
        var machine = try Self.machine(image, payloadSize: 128)
        let trace = try perform(&machine, machine.start(), image: image, &bootloader, packetSize: 128)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(machine.receiptIntervals == [32, 16, 31, 8])
        #expect(trace.contains(Self.seed12045Queue))
        #expect(trace.contains(.note("the bootloader refused to execute the object at byte 28672 (0x08): it is short; asking for its offset")))
        #expect(!trace.contains(.listen(awaiting: .answers(to: [.calculateChecksum]), wait: .response)))
        #expect(machine.objectsResent == 2)
    }

    /// The same, step by step at the eighth object: after Execute (0x08), Set PRN and Create the
    /// machine asks Calculate Checksum instead of listening for an answer nobody asked.
    @Test func theQueuesChecksumIsJudgedAtTheIntervalTheObjectWasCountedAt() throws {
        let image = try Kit.image(size: 39_921)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = Self.seed12045Drops
        var machine = try Self.machine(image, payloadSize: 128)
        _ = try perform(&machine, machine.start(), image: image, &bootloader, until: Self.seed12045Queue, packetSize: 128)
        // The object's last packet is lost: 31 of 32 arrive, counted at 16, so no receipt.
        let refused = DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted)
        #expect(
            machine.received(refused) == .listen(awaiting: .answers(to: [.calculateChecksum, .setPRN(31), .create(.data, size: 4096)]), wait: .response))
        #expect(machine.received(.success(.setPRN)) == .listen(awaiting: .answers(to: [.calculateChecksum, .create(.data, size: 4096)]), wait: .response))
        #expect(
            drain(&machine, machine.received(.success(.create))) == [
                .note("the bootloader refused to execute the object at byte 28672 (0x08): it is short; asking for its offset"),
                .send(.calculateChecksum),
            ])
        // The Create rewound to the object's start: it goes again, at a lower interval.
        let next = drain(&machine, machine.received(Kit.receipt(image, 28_672)))
        #expect(next.contains(.note("prn=auto: packets were lost; lowering the receipt interval to 8 packets")))
        #expect(next.last == .sleep(.milliseconds(500), purpose: "pausing before sending the object at byte 28672 again"))
    }

    /// Seed 12045's lost packets as the bootloader counts them: the 24th of the fourth object,
    /// and, after its 32 sent again and three clean objects, the last of the eighth.
    static let seed12045Drops: Set<Int> = [3 * 32 + 24, 4 * 32 + 32 + 3 * 32 + 32]
    /// The queue behind seed 12045's eighth object: the raise to 31 rides in it, with no
    /// Calculate Checksum (its packets were counted at 16, a receipt at its end).
    static let seed12045Queue = Action.streamThenQueue(30_720..<32_768, [.execute, .setPRN(31), .create(.data, size: 4096)])

    // MARK: - Resume whose bytes differ

    /// The link dropped while an executed object's receipt was unread (pipeline=on writes the
    /// Execute before it), and that object holds other bytes: Select(data) shows bytes that
    /// differ, not where. Calculate Checksum right after the Create reports the executed
    /// objects: not this image's, so the run starts over from the init packet. With them right
    /// (the bad byte in the unexecuted object), the same check lets the run go on. The strict
    /// flow checks too: an earlier pipelined run can leave the damage.
    @Test(arguments: [true, false], [true, false])
    func aResumeWhoseBytesDifferChecksTheExecutedObjects(executedWrong: Bool, pipeline: Bool) throws {
        let image = try Kit.image(size: 12_000)
        var bootloader = IdealBootloader(holding: image, upTo: 5632, executed: 4096)
        bootloader.data[executedWrong ? 100 : 5000] ^= 0xFF
        let checkpoint = Kit.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 5632, crc: CRC32.checksum(bootloader.data)))
        var machine = try Self.machine(image, pipeline: pipeline, resumingFrom: checkpoint)
        let trace = try perform(&machine, machine.start(), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        let create = try #require(trace.firstIndex(of: .send(.create(.data, size: 4096))))
        #expect(trace[create + 1] == .send(.calculateChecksum))
        let restarted = trace.contains {
            if case .note(let text) = $0 { text.contains("one was executed with bytes not this image's; starting over from the init packet") } else { false }
        }
        #expect(restarted == executedWrong)
        #expect(trace.contains(.send(.create(.command, size: UInt32(Kit.initPacket.count)))) == executedWrong)
    }

    /// The one whole object held, executed with other bytes, and the image one byte longer: the
    /// resume goes from byte 0, where the Create rewinds to the executed object's end, not to 0.
    /// The check after it sees that and starts over (campaign seed 5812).
    @Test func aResumeFromByteZeroChecksTheExecutedObjectsToo() throws {
        let image = try Kit.image(size: 4097)
        var bootloader = IdealBootloader(holding: image, upTo: 4096, executed: 4096)
        bootloader.data[100] ^= 0xFF
        let checkpoint = Kit.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 4096, crc: CRC32.checksum(bootloader.data)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        let trace = try perform(&machine, machine.start(), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(trace.contains(.note("the bootloader's 4096 bytes differ from this image; sending again from byte 0")))
        let create = try #require(trace.firstIndex(of: .send(.create(.data, size: 4096))))
        #expect(trace[create + 1] == .send(.calculateChecksum))
        #expect(trace.contains(.send(.create(.command, size: UInt32(Kit.initPacket.count)))))
    }

    /// An object past the resume point was executed with other bytes, so far on that the Create
    /// no longer fits (it rewinds to the last executed object): 0x08 starts over from the init
    /// packet (campaign seed 4537). The same 0x08 anywhere else still fails the update.
    @Test func aCreateRefusedAfterAResumeWhoseBytesDifferStartsOverFromTheInitPacket() throws {
        let image = try Kit.image(size: 10_000)
        var bootloader = IdealBootloader(holding: image, upTo: 8192, executed: 8192)
        bootloader.data[5000] ^= 0xFF
        let checkpoint = Kit.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 8192, crc: CRC32.checksum(bootloader.data)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        _ = try perform(&machine, machine.start(), image: image, &bootloader, until: .send(.create(.data, size: 4096)))
        let refused = DFUResponse(opCode: DFUOpCode.create.rawValue, result: .operationNotPermitted)
        #expect(
            drain(&machine, machine.received(refused)) == [
                .note(
                    "after a resume whose bytes differ, the bootloader refused to create the object at byte 4096 (0x08): it executed one past it, with bytes not this image's; starting over from the init packet, one request at a time"
                ),
                .send(.create(.command, size: UInt32(Kit.initPacket.count))),
            ])
        let trace = try perform(&machine, machine.received(bootloader.answer(.create(.command, size: UInt32(Kit.initPacket.count)))), image: image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)

        var fresh = try Self.machine(image)
        _ = try runScript(&fresh, fresh.start(), until: .send(.create(.data, size: 4096)))
        guard case .fail(let error) = fresh.received(refused) else {
            Issue.record("a Create refused on a fresh run did not fail the update")
            return
        }
        #expect(error.code == .deviceRejected)
    }

    // MARK: - Parameters

    @Test func parametersReadAutoAndOnAndRefuseOtherWords() throws {
        let auto = try NordicDFUConfiguration(parameters: ["prn": "auto", "pipeline": "on"])
        #expect(auto.adaptsReceiptInterval && auto.pipelinesObjects)
        let fixed = try NordicDFUConfiguration(parameters: ["prn": "5"])
        #expect(fixed.packetReceiptInterval == 5 && !fixed.adaptsReceiptInterval && !fixed.pipelinesObjects)
        #expect(throws: OTAError.self) { try NordicDFUConfiguration(parameters: ["prn": "fast"]) }
        #expect(throws: OTAError.self) { try NordicDFUConfiguration(parameters: ["prn": "70000"]) }
        #expect(throws: OTAError.self) { try NordicDFUConfiguration(parameters: ["pipeline": "yes"]) }
    }

    // MARK: - Kit

    static func machine(
        _ image: FirmwareImage, prn: String = "auto", pipeline: Bool = true, payloadSize: Int = 244,
        resumingFrom checkpoint: NordicDFUCheckpoint? = nil
    ) throws -> NordicDFUStateMachine {
        var configuration = try NordicDFUConfiguration(parameters: ["prn": prn])
        configuration.pipelinesObjects = pipeline
        return try NordicDFUStateMachine(image: image, payloadSize: payloadSize, configuration: configuration, resumingFrom: checkpoint)
    }
}

/// What a listen waits for is named, in a timeout's message, as it was when it was a string.
@Suite struct NordicDFUAwaitedDescriptionTests {
    @Test func awaitedAnswersAreNamedAsBefore() {
        typealias Awaited = NordicDFUStateMachine.Awaited
        #expect(Awaited.receipt.description == "packet receipt notification")
        #expect(Awaited.response(to: .calculateChecksum).description == "response to Calculate Checksum")
        #expect(
            Awaited.answers(to: [.execute, .setPRN(12), .create(.data, size: 4096)]).description
                == "answers to Execute, Set PRN to 12, Create data object of 4096 bytes")
    }
}
