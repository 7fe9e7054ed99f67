import Foundation
import OTACore
import Testing

@testable import OTAProtocolNordicDFU

/// The Nordic client's wire logic without a transport: scripted answers, and an ideal bootloader
/// written here in a few lines for whole runs.
@Suite struct NordicDFUStateMachineTests {
    typealias Action = NordicDFUStateMachine.Action

    // MARK: - A fresh update, step by step

    @Test func aFreshUpdateSendsTheInitPacketThenEachObject() throws {
        let image = try Self.image(size: 6000)
        var machine = try Self.machine(image)
        #expect(machine.start() == .send(.select(.command)))
        #expect(machine.received(.success(.select, [512, 0, 0])) == .send(.create(.command, size: 100)))
        #expect(machine.received(.success(.create)) == .send(.setPRN(0)))
        #expect(machine.received(.success(.setPRN)) == .writeInitPacket(0..<100))
        #expect(machine.streamed() == .send(.calculateChecksum))
        #expect(machine.received(.success(.calculateChecksum, [100, CRC32.checksum(Self.initPacket)])) == .send(.execute))
        #expect(machine.received(.success(.execute)) == .send(.setPRN(12)))
        #expect(machine.received(.success(.setPRN)) == .send(.select(.data)))
        #expect(
            drain(&machine, machine.received(.success(.select, [4096, 0, 0]))) == [.acknowledged(0), .enter(.transferring), .send(.create(.data, size: 4096))])
        #expect(machine.received(.success(.create)) == .sleep(.milliseconds(400), purpose: "waiting for the bootloader to prepare the first object"))
        // 12 packets of 244 bytes, a receipt, then the last 5 packets of the object without one.
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        #expect(machine.received(Self.receipt(image, 2928)) == .stream(2928..<4096, receipt: false))
        #expect(machine.streamed() == .send(.calculateChecksum))
        #expect(machine.received(.success(.calculateChecksum, [4096, Self.crc(image, 4096)])) == .send(.execute))
        #expect(drain(&machine, machine.received(.success(.execute))) == [.acknowledged(4096), .send(.create(.data, size: 1904))])
        // No delay after the first object.
        #expect(machine.received(.success(.create)) == .stream(4096..<6000, receipt: false))
        #expect(drain(&machine, machine.streamed()) == [.send(.calculateChecksum)])
        #expect(
            drain(&machine, machine.received(.success(.calculateChecksum, [6000, Self.crc(image, 6000)]))) == [
                .enter(.verifying), .send(.execute, wait: .verification),
            ])
        #expect(drain(&machine, machine.received(.success(.execute))) == [.acknowledged(6000), .finished])
        #expect(machine.objectsResent == 0)
    }

    @Test(arguments: [0, 1, 12, 17, 100])
    func wholeRunsAgainstAnIdealBootloaderDeliverTheImage(prn: Int) throws {
        let image = try Self.image(size: 20_000)
        var bootloader = IdealBootloader()
        let trace = try run(try Self.machine(image, prn: prn), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(bootloader.executed == image.count)
        #expect(trace.filter { $0 == .send(.calculateChecksum) }.count <= 6)  // one for the init packet, at most one per object
        let packets = trace.reduce(0) { count, action in
            guard case .stream(let range, _) = action else { return count }
            return count + (range.count + 243) / 244
        }
        #expect(packets == 4 * 17 + 15)  // four objects of 17 packets of 244 bytes, the last (3616 bytes) 15
    }

    @Test func aReceiptAtTheEndOfAnObjectReplacesCalculateChecksum() throws {
        let image = try Self.image(size: 4096)
        var bootloader = IdealBootloader()
        let trace = try run(try Self.machine(image, prn: 17), image, &bootloader)  // 17 packets per object
        #expect(trace.contains(.stream(0..<4096, receipt: true)))
        #expect(trace.filter { $0 == .send(.calculateChecksum) }.count == 1)  // the init packet's only
        #expect(bootloader.executed == 4096)
    }

    // MARK: - Resume

    @Test func resumeMidObjectStreamsTheRestWithoutCreatingOrSelecting() throws {
        let image = try Self.image(size: 10_000)
        let checkpoint = Self.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 5000, crc: Self.crc(image, 5000)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        #expect(
            drain(&machine, machine.start()) == [
                .note("the bootloader holds this init packet, executed, and 5000 bytes of this image; continuing without sending it again"),
                .send(.setPRN(12)),
            ])
        #expect(
            drain(&machine, machine.received(.success(.setPRN))) == [
                .acknowledged(4096), .enter(.transferring), .note("continuing object at byte 4096 from byte 5000"),
                .stream(5000..<7928, receipt: true),
            ])
        #expect(machine.received(Self.receipt(image, 7928)) == .stream(7928..<8192, receipt: false))

        var bootloader = IdealBootloader(holding: image, upTo: 5000, executed: 4096)
        let trace = try run(try Self.machine(image, resumingFrom: checkpoint), image, &bootloader)
        #expect(bootloader.data == image.bytes)
        #expect(!trace.contains { if case .send(.select, _) = $0 { true } else { false } })
        #expect(!trace.contains { if case .sleep = $0 { true } else { false } })  // the continued object was the first
        #expect(trace.filter { if case .send(.create, _) = $0 { true } else { false } }.count == 1)  // only the last object
    }

    @Test func resumeAtABoundaryExecutesTheHeldObjectAndAcceptsAlreadyExecuted() throws {
        let image = try Self.image(size: 10_000)
        let checkpoint = Self.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 8192, crc: Self.crc(image, 8192)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        _ = drain(&machine, machine.start())
        #expect(drain(&machine, machine.received(.success(.setPRN))) == [.acknowledged(8192), .send(.execute)])
        // SDK 15–17: 0x08 when the object was already executed.
        let alreadyExecuted = DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted)
        #expect(
            drain(&machine, machine.received(alreadyExecuted)) == [
                .note("the bootloader already holds 8192 bytes; continuing"), .enter(.transferring), .send(.create(.data, size: 1808)),
            ])
    }

    @Test func resumeAfterTheLastExecuteOnlyExecutesAgain() throws {
        let image = try Self.image(size: 10_000)
        let checkpoint = Self.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 10_000, crc: Self.crc(image, 10_000)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        _ = drain(&machine, machine.start())
        #expect(drain(&machine, machine.received(.success(.setPRN))) == [.acknowledged(10_000), .enter(.verifying), .send(.execute, wait: .verification)])
        #expect(drain(&machine, machine.received(.success(.execute))) == [.note("the bootloader already holds 10000 bytes; continuing"), .finished])
    }

    @Test func resumeDuringTheInitPacketSendsOnlyItsRest() throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machine(image)
        _ = machine.start()
        let held = DFUResponse.success(.select, [512, 40, CRC32.checksum(Self.initPacket.prefix(40))])
        #expect(drain(&machine, machine.received(held)) == [.note("resuming the init packet at byte 40"), .send(.setPRN(0))])
        #expect(machine.received(.success(.setPRN)) == .writeInitPacket(40..<100))

        var whole = try Self.machine(image)
        _ = whole.start()
        let all = DFUResponse.success(.select, [512, 100, CRC32.checksum(Self.initPacket)])
        #expect(drain(&whole, whole.received(all)) == [.note("the bootloader already holds this init packet"), .send(.execute)])

        var other = try Self.machine(image)
        _ = other.start()
        #expect(other.received(.success(.select, [512, 40, 0xDEAD])) == .send(.create(.command, size: 100)))
    }

    @Test func aCheckpointWithOtherBytesIsUsedOnlyUntilTheInitPacketIsCreatedAgain() throws {
        let image = try Self.image(size: 10_000)
        let stale = Self.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: 8192, crc: 0xDEAD))
        // The init packet is held: the checkpoint still holds, and leads to Create(data).
        var kept = try Self.machine(image, resumingFrom: stale)
        #expect(kept.start() == .send(.select(.command)))
        _ = drain(&kept, kept.received(.success(.select, [512, 100, CRC32.checksum(Self.initPacket)])))
        _ = kept.received(.success(.execute))
        #expect(
            drain(&kept, kept.received(.success(.setPRN))) == [
                .acknowledged(4096), .note("the bootloader's 8192 bytes differ from this image; sending again from byte 4096"),
                .enter(.transferring), .send(.create(.data, size: 4096)),
            ])
        // The init packet is created anew, which resets the bootloader's data: select again.
        var reset = try Self.machine(image, resumingFrom: stale)
        _ = reset.start()
        let create = reset.received(.success(.select, [512, 0, 0]))
        #expect(create == .send(.create(.command, size: 100)))
        var bootloader = IdealBootloader()
        let trace = try run(reset, image, &bootloader, first: create)
        #expect(trace.contains(.send(.select(.data))))
        #expect(bootloader.data == image.bytes)
    }

    @Test(arguments: [5000, 8192, 10_000])
    func aCheckpointWithThisInitPacketWholeLeavesTheCommandObjectAlone(held: Int) throws {
        let image = try Self.image(size: 10_000)
        let checkpoint = Self.checkpoint(data: DFUObjectSelection(maximumSize: 4096, offset: held, crc: Self.crc(image, held)))
        var bootloader = IdealBootloader(holding: image, upTo: held, executed: held / 4096 * 4096)
        let trace = try run(try Self.machine(image, resumingFrom: checkpoint), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.commandObjectRequests == 0)
        #expect(!trace.contains { if case .writeInitPacket = $0 { true } else { false } })
        #expect(!trace.contains { if case .send(.select, _) = $0 { true } else { false } })
        #expect(bootloader.data == image.bytes)
        #expect(bootloader.command == Self.initPacket)
    }

    @Test func aCheckpointWithAnotherInitPacketSendsThisOneAndSelectsTheDataAgain() throws {
        let image = try Self.image(size: 10_000)
        let other = Data((0..<100).map { UInt8(255 - $0) })  // another init packet of the same length
        // The data is a prefix of this very image: only the init packet tells it was sent under another.
        let checkpoint = Self.checkpoint(command: other, data: DFUObjectSelection(maximumSize: 4096, offset: 8192, crc: Self.crc(image, 8192)))
        var machine = try Self.machine(image, resumingFrom: checkpoint)
        // No Select(command): the checkpoint answered it.
        #expect(
            drain(&machine, machine.start()) == [
                .note(
                    "the bootloader holds another init packet (100 bytes, CRC-32 0x\(String(CRC32.checksum(other), radix: 16, uppercase: true))); sending this one, discarding the 8192 bytes of data received under it"
                ),
                .send(.create(.command, size: 100)),
            ])
        #expect(machine.received(.success(.create)) == .send(.setPRN(0)))
        #expect(machine.received(.success(.setPRN)) == .writeInitPacket(0..<100))
        #expect(machine.streamed() == .send(.calculateChecksum))
        #expect(machine.received(.success(.calculateChecksum, [100, CRC32.checksum(Self.initPacket)])) == .send(.execute))
        #expect(machine.received(.success(.execute)) == .send(.setPRN(12)))
        // Creating the command object discarded the data: the checkpoint's 8192 bytes are stale.
        #expect(machine.received(.success(.setPRN)) == .send(.select(.data)))
        #expect(
            drain(&machine, machine.received(.success(.select, [4096, 0, 0]))) == [
                .acknowledged(0), .enter(.transferring), .send(.create(.data, size: 4096)),
            ])

        var bootloader = IdealBootloader(holding: image, upTo: 8192, executed: 8192, initPacket: other)
        let trace = try run(try Self.machine(image, resumingFrom: checkpoint), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.command == Self.initPacket)
        #expect(bootloader.data == image.bytes)
        #expect(trace.first { if case .acknowledged = $0 { true } else { false } } == .acknowledged(0))
        let streamed = trace.compactMap { if case .stream(let range, _) = $0 { range } else { nil } }
        #expect(streamed.first?.lowerBound == 0)
        #expect(streamed.reduce(0) { $0 + $1.count } == image.count)
    }

    @Test func aCheckpointWithPartOfThisInitPacketOrNoDataOfThisImageSelectsTheCommandObject() throws {
        let image = try Self.image(size: 10_000)
        let nothing = DFUObjectSelection(maximumSize: 4096, offset: 0, crc: 0)
        let part = NordicDFUCheckpoint(
            command: DFUObjectSelection(maximumSize: 512, offset: 40, crc: CRC32.checksum(Self.initPacket.prefix(40))), data: nothing)
        var partial = try Self.machine(image, resumingFrom: part)
        // The data object is current: the rest of the init packet needs the command object selected.
        #expect(partial.start() == .send(.select(.command)))
        var whole = try Self.machine(image, resumingFrom: Self.checkpoint(data: nothing))
        // All of it, maybe not executed, and no data: Select(command), then Execute.
        #expect(whole.start() == .send(.select(.command)))
        #expect(
            drain(&whole, whole.received(.success(.select, [512, 100, CRC32.checksum(Self.initPacket)]))) == [
                .note("the bootloader already holds this init packet"), .send(.execute),
            ])
    }

    // MARK: - Objects that arrive wrong

    @Test(arguments: [(2900, true), (2928, false)])
    func aReceiptWithAWrongOffsetOrCRCCreatesTheObjectAgain(offset: Int, rightCRC: Bool) throws {
        let image = try Self.image(size: 6000)
        var machine = try Self.machineInDataStage(image)
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        let crc = rightCRC ? Self.crc(image, offset) : 0xBAD
        #expect(
            drain(&machine, machine.received(.success(.calculateChecksum, [UInt32(offset), crc]))) == [
                .note("object at byte 0: bootloader reports \(offset) bytes with a different CRC; sending the object again in 500 ms (attempt 2)"),
                .sleep(.milliseconds(500), purpose: "pausing before sending the object at byte 0 again"),
            ])
        #expect(machine.delayElapsed() == .send(.create(.data, size: 4096)))
        #expect(machine.objectsResent == 1)
        // No second delay: the first-object delay is asked for once.
        #expect(machine.received(.success(.create)) == .stream(0..<2928, receipt: true))
    }

    /// A receipt that never comes (a packet was lost, so the bootloader's count falls short):
    /// Calculate Checksum stands for it. Short, the object goes again; right (the receipt itself
    /// was lost), the transfer goes on.
    @Test(arguments: [(2684, 1), (2928, 0)])
    func aMissingReceiptIsAskedForWithCalculateChecksum(offset: Int, resent: Int) throws {
        let image = try Self.image(size: 6000)
        var machine = try Self.machineInDataStage(image)
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        #expect(
            drain(&machine, machine.receiptMissing()) == [
                .note("no packet receipt 3.0 s after byte 2928; asking the bootloader for its offset"), .send(.calculateChecksum),
            ])
        let answer = drain(&machine, machine.received(Self.receipt(image, offset)))
        if resent > 0 {
            #expect(
                answer == [
                    .note("object at byte 0: bootloader reports \(offset) bytes with a different CRC; sending the object again in 500 ms (attempt 2)"),
                    .sleep(.milliseconds(500), purpose: "pausing before sending the object at byte 0 again"),
                ])
        } else {
            #expect(answer == [.stream(2928..<4096, receipt: false)])
        }
        #expect(machine.objectsResent == resent)
    }

    /// A receipt for a packet the bootloader refused (`60 03 03`: it would overflow the object,
    /// as a doubled packet makes the last one do) carries no offset; the next receipt needs a
    /// whole interval more packets, which are not coming. It is waited for as long as a receipt
    /// (campaign seed 8702: before, the response timeout, 10 s, and a reconnection).
    @Test func aFailedReceiptIsWaitedForAsAReceiptThenAskedFor() throws {
        let image = try Self.image(size: 6000)
        var machine = try Self.machineInDataStage(image)
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        let refused = DFUResponse(opCode: DFUOpCode.calculateChecksum.rawValue, result: .invalidParameter)
        #expect(machine.received(refused) == .listen(awaiting: .receipt, wait: .receipt))
        #expect(drain(&machine, machine.receiptMissing()).last == .send(.calculateChecksum))
    }

    /// The same refused-packet receipt arriving while Calculate Checksum is awaited is not its
    /// answer (Calculate Checksum takes no parameter and needs no permission: it never fails with
    /// `0x03` or `0x08`): it is skipped (campaign seed 2979: before, the update failed with
    /// "bootloader rejected Calculate Checksum failed: 0x03").
    @Test(arguments: [DFUResultCode.invalidParameter, .operationNotPermitted])
    func aFailedReceiptIsNotTheChecksumAnswer(result: DFUResultCode) throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machineInDataStage(image, prn: 0)
        #expect(machine.delayElapsed() == .stream(0..<3000, receipt: false))
        #expect(machine.streamed() == .send(.calculateChecksum))
        let refused = DFUResponse(opCode: DFUOpCode.calculateChecksum.rawValue, result: result)
        #expect(machine.received(refused) == .listen(awaiting: .response(to: .calculateChecksum), wait: .response))
        #expect(drain(&machine, machine.received(Self.receipt(image, 3000))) == [.enter(.verifying), .send(.execute, wait: .verification)])
    }

    /// Create(data) answered 0x05: the SDK's answer when the erase fails, said so (the fault
    /// campaign's failing flash showed the usual meaning of 0x05, the init packet, instead).
    @Test func aDataObjectThatCannotBeErasedIsNamedAsFlash() throws {
        let image = try Self.image(size: 6000)
        var machine = try Self.machineInDataStage(image, attempts: 2)
        #expect(machine.delayElapsed() == .stream(0..<2928, receipt: true))
        _ = drain(&machine, machine.received(.success(.calculateChecksum, [100, 1])))
        #expect(machine.delayElapsed() == .send(.create(.data, size: 4096)))
        #expect(
            machine.received(DFUResponse(opCode: DFUOpCode.create.rawValue, result: .invalidObject))
                == .fail(
                    OTAError(
                        .deviceRejected,
                        "bootloader rejected Create data object of 4096 bytes failed: 0x05 (invalid object (init packet malformed or bad signature)); for a data object this means the bootloader could not erase its flash (worn or protected flash?)"
                    )))
    }

    @Test func objectAttemptsExhaustedFail() throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machineInDataStage(image, prn: 0, attempts: 2)
        #expect(machine.delayElapsed() == .stream(0..<3000, receipt: false))
        #expect(machine.streamed() == .send(.calculateChecksum))
        _ = drain(&machine, machine.received(.success(.calculateChecksum, [2500, 1])))
        #expect(machine.delayElapsed() == .send(.create(.data, size: 3000)))
        #expect(machine.received(.success(.create)) == .stream(0..<3000, receipt: false))
        _ = machine.streamed()
        // The last attempt failed too: wait for the link's verdict, then ask the bootloader.
        #expect(
            drain(&machine, machine.received(.success(.calculateChecksum, [2744, 1]))) == [
                .note("object at byte 0: bootloader reports 2744 bytes with a different CRC, 2 times; waiting 3.0 s for the link before giving up"),
                .sleep(.seconds(3), purpose: "waiting for the link's verdict after repeated checksum failures"),
            ])
        #expect(machine.delayElapsed() == .send(.select(.data)))
        // It answered: the link stayed up, and the advice names the settings in force.
        let failure = machine.received(.success(.select, [4096, 2744, 1]))
        #expect(
            failure
                == .fail(
                    OTAError(
                        .verificationFailed,
                        "object at byte 0 failed its checksum 2 times on a link that stayed up (bootloader has 2744 bytes); the bootloader drops packets: packet receipts are off; try --param prn=12, or a lower --max-chunk (such as 120)"
                    )))
        #expect(machine.objectsResent == 1)
    }

    @Test(arguments: [
        (12, "prn=12 is already set; try --param prn=1 or a lower --max-chunk (packets are 244 bytes; such as 120)"),
        (1, "prn=1 is already set; try a lower --max-chunk (packets are 244 bytes; such as 120)"),
    ])
    func theAdviceNamesTheReceiptIntervalInForce(prn: Int, advice: String) throws {
        let image = try Self.image(size: 2000)
        var machine = try Self.machineInDataStage(image, prn: prn, attempts: 1)
        var action = machine.delayElapsed()
        // Stream to the object's end, answering receipts with a wrong CRC.
        while case .stream(let range, let receipt) = action {
            action = receipt ? machine.received(.success(.calculateChecksum, [UInt32(range.upperBound), 0xBAD])) : machine.streamed()
            if case .send(.calculateChecksum, _) = action { action = machine.received(.success(.calculateChecksum, [2000, 0xBAD])) }
        }
        let pause = drain(&machine, action)
        #expect(pause.last == .sleep(.seconds(3), purpose: "waiting for the link's verdict after repeated checksum failures"))
        #expect(machine.delayElapsed() == .send(.select(.data)))
        guard case .fail(let error) = machine.received(.success(.select, [4096, 2000, 0xBAD])) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.message.hasSuffix("the bootloader drops packets: \(advice)"))
    }

    /// Resends are paced: 0.5 s, 1 s, 2 s, then at most 4 s between attempts.
    @Test func resendDelaysGrow() {
        let delays = (1...6).map { NordicDFUStateMachine.resendDelay(afterFailures: $0) }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
    }

    @Test func aLossyLinkRecoversWithinTheAttempts() throws {
        let image = try Self.image(size: 12_000)
        var bootloader = IdealBootloader()
        bootloader.dropPacketsOnce = [2, 40]  // packet 2 of the first object, then one of the second (after the first's resend)
        let trace = try run(try Self.machine(image, prn: 0), image, &bootloader)
        #expect(trace.last == .finished)
        #expect(bootloader.data == image.bytes)
        #expect(trace.filter { if case .note(let text) = $0 { text.contains("sending the object again") } else { false } }.count == 2)
        // The first-object delay, and a pause before each of the two resends.
        #expect(trace.filter { if case .sleep = $0 { true } else { false } }.count == 3)
    }

    @Test func noFirstObjectDelayWhenItIsZero() throws {
        let image = try Self.image(size: 5000)
        var bootloader = IdealBootloader()
        let trace = try run(try Self.machine(image, delay: .zero), image, &bootloader)
        #expect(!trace.contains { if case .sleep = $0 { true } else { false } })
        #expect(bootloader.data == image.bytes)
    }

    // MARK: - Refusals and malformed answers

    @Test func malformedAndUnexpectedNotificationsFail() throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machine(image)
        _ = machine.start()
        #expect(
            machine.received(Data([0x60, 0x06]))
                == .fail(
                    OTAError(
                        .malformedResponse, "malformed notification on the DFU Control Point while waiting for the response to Select command object: 2 bytes"
                    )))
        var wrongOp = try Self.machine(image)
        _ = wrongOp.start()
        #expect(wrongOp.received(.success(.execute)) == .fail(OTAError(.malformedResponse, "the bootloader answered op code 0x4 to Select command object")))
        var rejected = try Self.machine(image)
        _ = rejected.start()
        let refusal = DFUResponse(opCode: DFUOpCode.select.rawValue, result: .invalidObject)
        #expect(
            rejected.received(refusal)
                == .fail(
                    OTAError(
                        .deviceRejected, "bootloader rejected Select command object failed: 0x05 (invalid object (init packet malformed or bad signature))"
                    )))
    }

    @Test func aLateReceiptIsSkipped() throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machine(image)
        _ = machine.start()
        _ = machine.received(.success(.select, [512, 0, 0]))
        #expect(
            machine.received(.success(.calculateChecksum, [10, 10])) == .listen(awaiting: .response(to: .create(.command, size: 100)), wait: .response))
        #expect(machine.received(.success(.create)) == .send(.setPRN(0)))
    }

    @Test(arguments: [0, 4095])
    func anImpossibleDataObjectSizeIsMalformed(size: UInt32) throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machine(image)
        let first = machine.start()
        let actions = try runScript(&machine, first, until: .send(.select(.data)))
        #expect(actions.last == .send(.select(.data)))
        #expect(
            machine.received(.success(.select, [size, 0, 0])) == .fail(OTAError(.malformedResponse, "bootloader reported a data object size of \(size) bytes")))
    }

    @Test func initPacketLimitsAndRejections() throws {
        let image = try Self.image(size: 3000)
        var tooSmall = try Self.machine(image)
        _ = tooSmall.start()
        #expect(
            tooSmall.received(.success(.select, [64, 0, 0]))
                == .fail(OTAError(.invalidImage, "the init packet is 100 bytes; this bootloader accepts at most 64")))

        var rejected = try Self.machine(image)
        let start = rejected.start()
        let actions = try runScript(&rejected, start, until: .send(.execute))
        #expect(actions.last == .send(.execute))
        let hardware = DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .extendedError, extendedError: .hardwareVersionFailure)
        #expect(
            rejected.received(hardware)
                == .fail(
                    OTAError(
                        .deviceRejected,
                        "bootloader rejected the init packet: Execute failed: extended error 0x06 (hardware version mismatch (hw_version differs from the bootloader's))"
                    )))

        // An init packet received wrong is created and sent again, paced as an object; after the
        // last attempt the link is given its verdict, and a bootloader that answers fails it.
        var wrong = try Self.machine(image, attempts: 2)
        let begin = wrong.start()
        _ = try runScript(&wrong, begin, until: .send(.calculateChecksum))
        #expect(
            drain(&wrong, wrong.received(.success(.calculateChecksum, [99, 0xAB]))) == [
                .note("the bootloader received the init packet wrong: 99 bytes with CRC-32 0xAB; sending it again in 500 ms (attempt 2)"),
                .sleep(.milliseconds(500), purpose: "pausing before sending the init packet again"),
            ])
        #expect(wrong.delayElapsed() == .send(.create(.command, size: 100)))
        #expect(wrong.received(.success(.create)) == .send(.setPRN(0)))
        #expect(wrong.received(.success(.setPRN)) == .writeInitPacket(0..<100))
        #expect(wrong.streamed() == .send(.calculateChecksum))
        #expect(
            drain(&wrong, wrong.received(.success(.calculateChecksum, [100, 0xAB]))) == [
                .note("the bootloader received the init packet wrong: 100 bytes with CRC-32 0xAB, 2 times; waiting 3.0 s for the link before giving up"),
                .sleep(.seconds(3), purpose: "waiting for the link's verdict after repeated init packet checksum failures"),
            ])
        #expect(wrong.delayElapsed() == .send(.select(.data)))
        #expect(
            wrong.received(.success(.select, [4096, 0, 0]))
                == .fail(OTAError(.verificationFailed, "the bootloader received the init packet wrong 2 times on a link that stayed up; run the update again")))

        let bare = try FirmwareImage(bytes: image.bytes, name: "bare.bin")
        #expect(throws: OTAError.self) { try NordicDFUStateMachine(image: bare, payloadSize: 244, configuration: NordicDFUConfiguration()) }
    }

    @Test func executeRefusalsNameTheObject() throws {
        let image = try Self.image(size: 3000)
        var machine = try Self.machineInDataStage(image, prn: 0)
        _ = machine.delayElapsed()
        _ = machine.streamed()
        _ = drain(&machine, machine.received(.success(.calculateChecksum, [3000, Self.crc(image, 3000)])))
        let refusal = DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .extendedError, extendedError: .verificationFailed)
        let failure = machine.received(refusal)
        guard case .fail(let error) = failure else { Issue.record("expected a failure, got \(failure)"); return }
        #expect(error.code == .verificationFailed)
        #expect(error.message.hasPrefix("bootloader rejected Execute of the object at byte 0 failed: extended error 0x0C"))
    }

    // MARK: - Buttonless

    @Test func buttonlessEntrySetsTheNameThenRestarts() {
        var machine = ButtonlessEntryStateMachine(advertisingName: "Dfu12345")
        #expect(machine.start() == .send(.setAdvertisingName("Dfu12345")))
        #expect(machine.received(Data([0x20, 0x02, 0x01])) == .send(.enterBootloader))
        #expect(machine.received(Data([0x20, 0x01, 0x01])) == .restarting(advertisedName: "Dfu12345"))

        var refused = ButtonlessEntryStateMachine(advertisingName: "Dfu12345")
        _ = refused.start()
        #expect(refused.received(Data([0x20, 0x02, 0x06])) == .fail(OTAError(.deviceRejected, "the application refused to enter its bootloader: busy")))
        var malformed = ButtonlessEntryStateMachine(advertisingName: "Dfu12345")
        _ = malformed.start()
        #expect(malformed.received(Data([0x20, 0x01, 0x01])) == .fail(OTAError(.malformedResponse, "malformed buttonless DFU response (3 bytes)")))
    }

    // MARK: - Kit

    static let initPacket = Data((0..<100).map { UInt8($0) })

    static func image(size: Int) throws -> FirmwareImage {
        try FirmwareImage(
            bytes: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }),
            name: "test.bin",
            attachments: [NordicDFUClient.initPacketKey: initPacket]
        )
    }

    static func machine(
        _ image: FirmwareImage,
        prn: Int = 12,
        delay: Duration = .milliseconds(400),
        attempts: Int = 3,
        resumingFrom checkpoint: NordicDFUCheckpoint? = nil
    ) throws -> NordicDFUStateMachine {
        var configuration = NordicDFUConfiguration()
        configuration.packetReceiptInterval = prn
        configuration.dataObjectDelay = delay
        configuration.objectAttempts = attempts
        return try NordicDFUStateMachine(image: image, payloadSize: 244, configuration: configuration, resumingFrom: checkpoint)
    }

    /// A machine that has just created the first data object and asked for the delay.
    static func machineInDataStage(_ image: FirmwareImage, prn: Int = 12, attempts: Int = 3) throws -> NordicDFUStateMachine {
        var machine = try machine(image, prn: prn, attempts: attempts)
        let start = machine.start()
        _ = try runScript(&machine, start, until: .send(.create(.data, size: UInt32(min(4096, image.count)))))
        let delay = machine.received(.success(.create))
        #expect(delay == .sleep(.milliseconds(400), purpose: "waiting for the bootloader to prepare the first object"))
        return machine
    }

    /// A checkpoint whose command object holds `command` (the test's init packet by default),
    /// whole, and whose data object is `data`.
    static func checkpoint(command: Data = initPacket, data: DFUObjectSelection) -> NordicDFUCheckpoint {
        NordicDFUCheckpoint(command: DFUObjectSelection(maximumSize: 512, offset: command.count, crc: CRC32.checksum(command)), data: data)
    }

    static func crc(_ image: FirmwareImage, _ end: Int) -> UInt32 {
        CRC32.checksum(image.bytes.prefix(end))
    }

    static func receipt(_ image: FirmwareImage, _ offset: Int) -> DFUResponse {
        .success(.calculateChecksum, [UInt32(offset), crc(image, offset)])
    }
}

/// Follows `first` through every action that expects no answer; returns them with the first
/// one that does.
func drain(_ machine: inout NordicDFUStateMachine, _ first: NordicDFUStateMachine.Action) -> [NordicDFUStateMachine.Action] {
    var actions = [first]
    while true {
        switch actions[actions.count - 1] {
        case .enter, .acknowledged, .note: actions.append(machine.proceed())
        default: return actions
        }
    }
}

/// Runs `machine` against an ideal bootloader with a fresh session until it asks for `stop`.
func runScript(
    _ machine: inout NordicDFUStateMachine, _ first: NordicDFUStateMachine.Action, until stop: NordicDFUStateMachine.Action
) throws -> [NordicDFUStateMachine.Action] {
    var bootloader = IdealBootloader()
    return try perform(&machine, first, image: nil, &bootloader, until: stop)
}

/// Runs `machine` to its end against `bootloader`; returns every action.
func run(
    _ machine: NordicDFUStateMachine,
    _ image: FirmwareImage,
    _ bootloader: inout IdealBootloader,
    first: NordicDFUStateMachine.Action? = nil
) throws -> [NordicDFUStateMachine.Action] {
    var machine = machine
    let start = first ?? machine.start()
    return try perform(&machine, start, image: image, &bootloader, until: nil)
}

func perform(
    _ machine: inout NordicDFUStateMachine,
    _ first: NordicDFUStateMachine.Action,
    image: FirmwareImage?,
    _ bootloader: inout IdealBootloader,
    until stop: NordicDFUStateMachine.Action? = nil,
    packetSize: Int = 244
) throws -> [NordicDFUStateMachine.Action] {
    var trace: [NordicDFUStateMachine.Action] = []
    var action = first
    var queuedAnswers: [DFUResponse] = []
    for _ in 0..<10_000 {
        trace.append(action)
        if action == stop { return trace }
        switch action {
        case .send(let request, _):
            action = machine.received(bootloader.answer(request))
        case .streamThenQueue(let range, let requests):
            // Packets and requests processed FIFO, as the SDK's scheduler does; answered in that
            // order or, as an Execute re-queued behind the Create while flash is busy, the other
            // way round.
            let bytes = try #require(image, "streaming in a script without an image")[range]
            bootloader.receipts = []
            bootloader.write(bytes, packetSize: packetSize)
            queuedAnswers = bootloader.receipts + requests.map { bootloader.answer($0) }
            if bootloader.answersQueuedRequestsInReverse { queuedAnswers.reverse() }
            guard !queuedAnswers.isEmpty else {
                action = machine.receiptMissing()
                continue
            }
            action = machine.received(queuedAnswers.removeFirst())
        case .listen(_, let wait):
            guard !queuedAnswers.isEmpty else {
                guard wait == .receipt else {
                    Issue.record("unexpected listen")
                    return trace
                }
                action = machine.receiptMissing()
                continue
            }
            action = machine.received(queuedAnswers.removeFirst())
        case .writeInitPacket(let range):
            bootloader.write(NordicDFUStateMachineTests.initPacket[range], packetSize: 244)
            action = machine.streamed()
        case .stream(let range, let receipt):
            let bytes = try #require(image, "streaming in a script without an image")[range]
            bootloader.write(bytes, packetSize: packetSize)
            action = receipt ? machine.received(bootloader.answer(.calculateChecksum)) : machine.streamed()
        case .sleep:
            action = machine.delayElapsed()
        case .enter, .acknowledged, .note:
            action = machine.proceed()
        case .finished, .fail:
            return trace
        }
    }
    Issue.record("the machine did not finish")
    return trace
}

/// A bootloader in a few lines: Select, Create, Set PRN, Calculate Checksum and Execute as
/// SDK 15.3 answers them, and packets optionally dropped once by index.
struct IdealBootloader {
    var command = Data()
    var commandSize = 0
    var initExecuted = false
    var current = DFUObjectType.command
    var data = Data()
    var executed = 0
    var objectSize: Int?
    var packetsSeen = 0
    var dropPacketsOnce: Set<Int> = []
    /// Whether the answers to queued requests come last first (an Execute that waited for flash).
    var answersQueuedRequestsInReverse = false
    /// The packet receipt interval (Set PRN), counted from the last Create, Set PRN or receipt.
    var prn = 0
    var prnCountdown = 0
    /// Receipts the last writes produced (only the pipelined script reads them).
    var receipts: [DFUResponse] = []
    /// Requests and packets on the command object: Select or Create of it, and Calculate
    /// Checksum, Execute and init packet bytes while it is current.
    var commandObjectRequests = 0

    init() {}

    /// A bootloader with `initPacket` executed and `upTo` bytes of `image`, `executed` of them executed.
    init(holding image: FirmwareImage, upTo offset: Int, executed: Int, initPacket: Data = NordicDFUStateMachineTests.initPacket) {
        command = initPacket
        commandSize = command.count
        initExecuted = true
        current = .data
        data = image.bytes.prefix(offset)
        self.executed = executed
        objectSize = offset > executed ? min(4096, image.count - executed) : nil
    }

    mutating func answer(_ request: DFURequest) -> DFUResponse {
        switch request {
        case .select(.command), .create(.command, _): commandObjectRequests += 1
        case .calculateChecksum, .execute: if current == .command { commandObjectRequests += 1 }
        default: break
        }
        switch request {
        case .select(let type):
            current = type
            return type == .command
                ? .success(.select, [512, UInt32(command.count), CRC32.checksum(command)])
                : .success(.select, [4096, UInt32(data.count), CRC32.checksum(data)])
        case .create(.command, size: let size):
            current = .command
            (command, commandSize, initExecuted, data, executed, objectSize) = (Data(), Int(size), false, Data(), 0, nil)
            return .success(.create)
        case .create(.data, size: let size):
            current = .data
            prnCountdown = prn
            data = data.prefix(executed)
            objectSize = Int(size)
            return .success(.create)
        case .setPRN(let interval):
            (prn, prnCountdown) = (Int(interval), Int(interval))
            return .success(.setPRN)
        case .calculateChecksum:
            let bytes = current == .command ? command : data
            return .success(.calculateChecksum, [UInt32(bytes.count), CRC32.checksum(bytes)])
        case .execute:
            if current == .command {
                guard command.count == commandSize else { return DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted) }
                initExecuted = true
                return .success(.execute)
            }
            guard let size = objectSize, data.count - executed == size else {
                return DFUResponse(opCode: DFUOpCode.execute.rawValue, result: .operationNotPermitted)
            }
            executed = data.count
            objectSize = nil
            return .success(.execute)
        case .abort:
            return .success(.abort)
        }
    }

    mutating func write(_ bytes: Data, packetSize: Int) {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let packet = bytes[start..<min(start + packetSize, bytes.endIndex)]
            start = packet.endIndex
            if current == .command {
                commandObjectRequests += 1
                command += packet
                continue
            }
            packetsSeen += 1
            if dropPacketsOnce.remove(packetsSeen) != nil { continue }
            data += packet
            prnCountdown -= 1
            if prn > 0, prnCountdown == 0 {
                prnCountdown = prn
                receipts.append(.success(.calculateChecksum, [UInt32(data.count), CRC32.checksum(data)]))
            }
        }
    }
}
