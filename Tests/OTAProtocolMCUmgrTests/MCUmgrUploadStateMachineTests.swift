import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct MCUmgrUploadStateMachineTests {
    typealias Machine = MCUmgrUploadStateMachine

    static let image = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    static let sha = Data(SHA256.hash(image))

    static func machine(window: Int = 4, frameLimit: Int = 512, writeLength: Int = 244, at offset: Int = 0) -> Machine {
        Machine(
            image: .inMemory(image), sha: sha,
            settings: .init(frameLimit: frameLimit, window: window, writeLength: writeLength, eraseTimeout: .seconds(45)),
            startingAt: offset, firstSequence: 10)
    }

    static func response(_ request: Machine.Outbound, off: Int, match: Bool? = nil) -> Data {
        SMPMessage(
            operation: .writeResponse, group: 1, command: 1, sequence: request.sequence, payload: ImageUploadResponse(offset: off, match: match).payload
        ).encoded
    }

    static func requests(_ action: Machine.Action) -> [Machine.Outbound] {
        if case .send(let requests, _) = action { return requests }
        return []
    }

    static func decoded(_ request: Machine.Outbound) throws -> ImageUploadRequest {
        guard case .upload(let upload) = try MCUmgrRequest(decoding: SMPMessage(decoding: request.frame)) else { throw OTAError(.internal, "not an upload") }
        return upload
    }

    static func failure(_ action: Machine.Action) -> OTAError? {
        if case .fail(let error) = action { return error }
        return nil
    }

    @Test func theFirstRequestCarriesLengthAndShaAndGoesAloneUnderTheEraseTimeout() throws {
        var machine = Self.machine()
        let first = Self.requests(machine.start())
        #expect(first.count == 1)
        let request = try Self.decoded(try #require(first.first))
        #expect(request.offset == 0)
        #expect(request.length == Self.image.count)
        #expect(request.sha == Self.sha)
        #expect(request.image == nil)
        #expect(first[0].frame.count <= 512)
        guard case .awaitResponse(let timeout, let awaited) = machine.sent() else { Issue.record("expected a wait"); return }
        #expect(timeout == .seconds(45))
        #expect(awaited == .firstAfterErase)
        #expect(awaited.description == "first image upload response (the device erases its slot first)")
        #expect(machine.isAwaitingErase)
    }

    @Test func requestsFillTheBufferExactlyAndAreCutIntoWritesThatCoverTheirData() throws {
        for frameLimit in [100, 244, 512, 2475] {
            var machine = Self.machine(window: 1, frameLimit: frameLimit)
            var action = machine.start()
            var offset = 0
            while case .send(let requests, _) = action {
                let request = requests[0]
                // Window 1 uses the whole buffer; the data ends on a multiple of 4 unless it is the last piece.
                #expect(request.frame.count <= frameLimit)
                if request.range.upperBound < Self.image.count {
                    #expect(request.frame.count > frameLimit - 4 - 1, "frame of \(request.frame.count) for a buffer of \(frameLimit)")
                    #expect(request.range.upperBound % 4 == 0)
                }
                #expect(request.range.lowerBound == offset)
                #expect(Data(request.writes.map(\.bytes).joined()) == request.frame)
                #expect(request.writes.allSatisfy { $0.bytes.count <= 244 })
                #expect(request.writes.map(\.covering.count).reduce(0, +) == request.range.count)
                #expect(request.writes.last?.covering.upperBound == request.range.upperBound)
                #expect(try Self.decoded(request).data == Self.image[request.range])
                offset = request.range.upperBound
                _ = machine.sent()
                action = machine.received(Self.response(request, off: offset))
            }
            guard case .finished = action else { Issue.record("buffer \(frameLimit): \(action)"); continue }
            #expect(offset == Self.image.count)
            #expect(machine.acknowledged == Self.image.count)
        }
    }

    @Test func pipelinedFramesAreWholeATTWrites() throws {
        var machine = Self.machine(window: 4, frameLimit: 2475)
        let first = Self.requests(machine.start())[0]
        _ = machine.sent()
        let window = Self.requests(machine.received(Self.response(first, off: first.range.upperBound)))
        #expect(window.count == 4)
        for request in window {
            #expect(request.frame.count <= 2440)
            #expect(request.frame.count > 2440 - 4)
            #expect(request.writes.count == 10)
        }
    }

    @Test func afterTheFirstAnswerAWindowIsInFlightAndEachAnswerSendsOneMore() throws {
        var machine = Self.machine(window: 3)
        let first = Self.requests(machine.start())[0]
        _ = machine.sent()
        let window = Self.requests(machine.received(Self.response(first, off: first.range.upperBound)))
        #expect(window.map(\.sequence) == [11, 12, 13])
        #expect(window[0].range.lowerBound == first.range.upperBound)
        #expect(window[1].range.lowerBound == window[0].range.upperBound)
        #expect(machine.isAwaitingErase == false)
        guard case .awaitResponse(nil, let awaited) = machine.sent() else { Issue.record("expected a wait with the response timeout"); return }
        // Named by the oldest request in flight, for a timeout's message.
        #expect(awaited == .upload(sequence: 11))
        #expect(awaited.description == "image upload response (sequence 11)")
        let next = Self.requests(machine.received(Self.response(window[0], off: window[0].range.upperBound)))
        #expect(next.count == 1)
        #expect(next[0].range.lowerBound == window[2].range.upperBound)
        #expect(machine.acknowledged == window[0].range.upperBound)
    }

    @Test func anUnexpectedOffsetDrainsTheWindowThenResendsFromTheDevicesOffset() throws {
        var machine = Self.machine(window: 3)
        let first = Self.requests(machine.start())[0]
        _ = machine.sent()
        let window = Self.requests(machine.received(Self.response(first, off: first.range.upperBound)))
        _ = machine.sent()
        // The device lost window[0]: it answers it, and the two after it, with its offset.
        let lost = window[0].range.lowerBound
        guard case .awaitResponse = machine.received(Self.response(window[0], off: lost)) else { Issue.record("must drain"); return }
        guard case .awaitResponse = machine.received(Self.response(window[1], off: lost)) else { Issue.record("must drain"); return }
        let resent = machine.received(Self.response(window[2], off: lost))
        guard case .send(let requests, let rewound) = resent else { Issue.record("must resend: \(resent)"); return }
        #expect(rewound == lost)
        #expect(requests.first?.range.lowerBound == lost)
        #expect(requests.count == 3)
        #expect(machine.resyncs == 1)
    }

    @Test func aFirstAnswerWithTheDevicesOffsetResumesThere() throws {
        var machine = Self.machine(window: 2)
        let first = Self.requests(machine.start())[0]
        _ = machine.sent()
        let continued = Self.requests(machine.received(Self.response(first, off: 12_000)))
        #expect(continued.first?.range.lowerBound == 12_000)
        #expect(machine.acknowledged == 12_000)
    }

    @Test func resumingAtAnOffsetStartsWithAWindowAndNoFirstRequest() throws {
        var machine = Self.machine(window: 2, at: 8_000)
        let requests = Self.requests(machine.start())
        #expect(requests.count == 2)
        #expect(try Self.decoded(requests[0]).length == nil)
        #expect(requests[0].range.lowerBound == 8_000)
    }

    @Test func busyPausesThenResendsTheRefusedRequest() throws {
        var machine = Self.machine(window: 2)
        let first = Self.requests(machine.start())[0]
        _ = machine.sent()
        let window = Self.requests(machine.received(Self.response(first, off: first.range.upperBound)))
        _ = machine.sent()
        let busy = SMPMessage(
            operation: .writeResponse, group: 1, command: 1, sequence: window[0].sequence, payload: SMPDeviceError.generic(.busy, reason: nil).payload
        ).encoded
        guard case .awaitResponse = machine.received(busy) else { Issue.record("must drain"); return }
        guard case .wait(let delay, _) = machine.received(Self.response(window[1], off: window[0].range.lowerBound)) else {
            Issue.record("must pause")
            return
        }
        #expect(delay == .milliseconds(100))
        let again = Self.requests(machine.delayElapsed())
        #expect(again.first?.range.lowerBound == window[0].range.lowerBound)
        #expect(machine.busyAnswers == 1)
    }

    @Test func badAnswersFailWithOneLineNamingTheCause() throws {
        func afterFirst() -> (Machine, Machine.Outbound) {
            var machine = Self.machine()
            let first = Self.requests(machine.start())[0]
            _ = machine.sent()
            return (machine, first)
        }
        var (machine, first) = afterFirst()
        var error = Self.failure(machine.received(Self.response(first, off: 20_001)))
        #expect(error?.code == .malformedResponse)
        #expect(error?.message == "device reported upload offset 20001, beyond the 20000-byte image")

        (machine, first) = afterFirst()
        let stranger = SMPMessage(operation: .writeResponse, group: 1, command: 1, sequence: 99, payload: .textMap(["off": .unsigned(4)])).encoded
        error = Self.failure(machine.received(stranger))
        #expect(error?.message == "SMP response with sequence number 99 answers no request in flight (awaiting 10)")

        (machine, first) = afterFirst()
        var broken = Self.response(first, off: 100)
        broken[SMPHeader.length] = 0xFF  // a break where the map should start
        error = Self.failure(machine.received(broken))
        #expect(error?.code == .malformedResponse)
        #expect(error?.message.hasPrefix("malformed SMP response: an SMP payload is malformed CBOR") == true)

        (machine, first) = afterFirst()
        let refused = SMPMessage(
            operation: .writeResponse, group: 1, command: 1, sequence: first.sequence, payload: SMPDeviceError.group(1, code: 9).payload
        ).encoded
        error = Self.failure(machine.received(refused))
        #expect(error?.code == .deviceRejected)
        #expect(error?.message == "device rejected image upload at byte 0: image management rc 9 (no free slot)")
        for message in [error?.message ?? ""] { #expect(!message.contains("\n")) }
    }

    @Test func aMismatchOnTheLastAnswerFailsVerification() throws {
        var machine = Self.machine(window: 1, frameLimit: 2475, at: 19_000)
        var action = machine.start()
        while case .send(let requests, _) = action {
            _ = machine.sent()
            let end = requests[0].range.upperBound
            action = machine.received(Self.response(requests[0], off: end, match: end == Self.image.count ? false : nil))
        }
        #expect(Self.failure(action)?.code == .verificationFailed)
    }

    @Test func aBufferTooSmallForAnyDataFails() {
        var machine = Self.machine(frameLimit: 40)
        #expect(Self.failure(machine.start())?.code == .deviceRejected)
    }

    @Test func aDeviceThatNeverTakesTheDataIsGivenUpOn() {
        var machine = Self.machine(window: 2)
        var action = machine.start()
        var rounds = 0
        while case .send(let requests, _) = action, rounds < 100 {
            rounds += 1
            _ = machine.sent()
            for request in requests {
                // Always the first piece's end: the device refuses everything after it.
                action = machine.received(Self.response(request, off: request.range.lowerBound == 0 ? request.range.upperBound : 484))
            }
        }
        #expect(rounds < 100)
        #expect(Self.failure(action)?.message.hasPrefix("device asked for byte 484 again 9 times in a row without taking data") == true)
    }
}
