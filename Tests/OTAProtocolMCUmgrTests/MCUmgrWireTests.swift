import Foundation
import OTACore
import OTATransportSimulator
import Testing

@testable import OTAProtocolMCUmgr

@Suite struct MCUmgrWireTests {
    @Test func firstUploadRequestCarriesLengthShaAndDataLast() {
        let request = MCUmgrRequest.upload(ImageUploadRequest(length: 5, offset: 0, sha: Data([0xAA, 0xBB]), data: Data([1, 2])))
        // 0A 00 0017 0001 03 01 | a4 63 "len" 05 63 "off" 00 63 "sha" 42 aa bb 64 "data" 42 01 02
        let expected = Data(hexString: "0a00001a 0001 0301 a4 636c656e 05 636f6666 00 63736861 42aabb 6464617461 420102")
        #expect(request.encoded(sequence: 3) == expected)
    }

    @Test func laterUploadRequestCarriesOnlyOffsetAndData() {
        let request = MCUmgrRequest.upload(ImageUploadRequest(offset: 4096, data: Data([9])))
        #expect(request.encoded(sequence: 0xFF) == Data(hexString: "0a00000f 0001 ff01 a2 636f6666 191000 6464617461 4109"))
    }

    @Test func commandsUseTheirGroupsIdsAndOperations() {
        #expect(MCUmgrRequest.readImageState.encoded(sequence: 1) == Data(hexString: "08000001 0001 0100 a0"))
        #expect(MCUmgrRequest.parameters.encoded(sequence: 2) == Data(hexString: "08000001 0000 0206 a0"))
        #expect(MCUmgrRequest.reset.encoded(sequence: 3) == Data(hexString: "0a000001 0000 0305 a0"))
        #expect(MCUmgrRequest.erase(slot: 1).encoded(sequence: 4) == Data(hexString: "0a000007 0001 0405 a1 64736c6f74 01"))
        #expect(MCUmgrRequest.echo("hi").encoded(sequence: 5) == Data(hexString: "0a000006 0000 0500 a1 6164 626869"))
        #expect(
            MCUmgrRequest.setImageState(hash: Data([1, 2]), confirm: false).encoded(sequence: 6)
                == Data(hexString: "0a000012 0001 0600 a2 6468617368 420102 67636f6e6669726d f4"))
    }

    @Test func requestsRoundTripThroughTheDeviceSideDecoder() throws {
        let requests: [MCUmgrRequest] = [
            .echo("x"), .reset, .parameters, .readImageState, .setImageState(hash: nil, confirm: true), .setImageState(hash: Data([7]), confirm: false),
            .erase(slot: nil), .erase(slot: 1),
            .upload(ImageUploadRequest(image: 1, length: 9, offset: 0, sha: Data([1]), data: Data([2]), upgrade: true)),
        ]
        for request in requests {
            let message = try SMPMessage(decoding: request.encoded(sequence: 9))
            #expect(try MCUmgrRequest(decoding: message) == request)
        }
    }

    @Test func bothErrorFormsAreReadWithTheirMeanings() throws {
        // {"rc": 10, "rsn": "flash"} and {"err": {"group": 1, "rc": 28}}, as Zephyr writes them
        // (indefinite-length maps).
        let v1 = try CBORDecoder().decode(Data(hexString: "bf 627263 0a 6372736e 65666c617368 ff"))
        #expect(SMPDeviceError(payload: v1) == .generic(.busy, reason: "flash"))
        #expect(SMPDeviceError(payload: v1)?.isBusy == true)
        #expect(SMPDeviceError(payload: v1)?.description == "rc 10 (busy, \"flash\")")
        let v2 = try CBORDecoder().decode(Data(hexString: "bf 63657272 bf 6567726f7570 01 627263 181c ff ff"))
        #expect(SMPDeviceError(payload: v2) == .group(1, code: 28))
        #expect(SMPDeviceError(payload: v2)?.description == "image management rc 28 (image already pending)")
        #expect(
            SMPDeviceError(payload: .textMap(["err": .textMap(["group": .unsigned(1), "rc": .unsigned(9)])]))?.description
                == "image management rc 9 (no free slot)")
        #expect(SMPDeviceError(payload: .textMap(["rc": .unsigned(0)])) == nil)
        #expect(SMPDeviceError(payload: .textMap(["off": .unsigned(0)])) == nil)
        #expect(SMPReturnCode(rawValue: 8).meaning == "not supported")
        #expect(SMPReturnCode(rawValue: 300).meaning == "user-defined error 300")
        for error in [SMPDeviceError.generic(.busy, reason: "x"), .generic(.notSupported, reason: nil), .group(1, code: 9)] {
            #expect(SMPDeviceError(payload: error.payload) == error)
        }
    }

    @Test func aDeviceErrorBecomesAOneLineDeviceRejection() throws {
        let request = MCUmgrRequest.setImageState(hash: Data([1]), confirm: true)
        let response = SMPMessage(
            operation: .writeResponse, group: 1, command: 0, sequence: 4, payload: SMPDeviceError.group(1, code: 28).payload)
        let error = #expect(throws: MCUmgrWireError.self) { try response.payload(answering: request, sequence: 4) }
        #expect(error?.otaError.code == .deviceRejected)
        #expect(error?.otaError.message == "device rejected confirm of image 01…: image management rc 28 (image already pending)")
        #expect(error?.otaError.message.contains("\n") == false)
    }

    @Test func responsesForAnotherSequenceOrCommandAreRefused() throws {
        let response = SMPMessage(operation: .writeResponse, group: 1, command: 1, sequence: 5, payload: .textMap(["off": .unsigned(10)]))
        let upload = MCUmgrRequest.upload(ImageUploadRequest(offset: 0, data: Data([1])))
        #expect(throws: MCUmgrWireError.unknownSequence(5, awaiting: [6])) { try response.payload(answering: upload, sequence: 6) }
        #expect(throws: MCUmgrWireError.mismatchedResponse(got: .imageUpload, operation: .writeResponse, expected: .imageState)) {
            try response.payload(answering: .readImageState, sequence: 5)
        }
        #expect(
            MCUmgrWireError.unknownSequence(5, awaiting: [6, 7]).description
                == "SMP response with sequence number 5 answers no request in flight (awaiting 6, 7)")
        #expect(try ImageUploadResponse(payload: response.payload(answering: upload, sequence: 5)) == ImageUploadResponse(offset: 10))
    }

    @Test func malformedPayloadsNameWhatIsMissing() {
        #expect(throws: MCUmgrWireError.malformed("the image upload response has no 'off'")) {
            try ImageUploadResponse(payload: .textMap(["of": .unsigned(1)]))
        }
        #expect(throws: MCUmgrWireError.malformed("the image state response has no 'images' list")) { try ImageStateResponse(payload: .map([])) }
        #expect(throws: MCUmgrWireError.malformed("the MCUmgr parameters response has no 'buf_count'")) {
            try MCUmgrParameters(payload: .textMap(["buf_size": .unsigned(512)]))
        }
        let broken = MCUmgrWireError.frame(.payload(CBORError("truncated", at: 3)))
        #expect(broken.otaError.code == .malformedResponse)
        #expect(broken.description.hasPrefix("malformed SMP response: an SMP payload is malformed CBOR at byte 3"))
        #expect(MCUmgrWireError.offsetBeyondImage(offset: 9000, length: 100).description == "device reported upload offset 9000, beyond the 100-byte image")
    }

    @Test func imageStateListRoundTripsWithFlagsOnlyWhenSet() throws {
        let state = ImageStateResponse(images: [
            ImageSlotState(slot: 0, version: "1.0.0", hash: Data(repeating: 0x11, count: 32), active: true),
            ImageSlotState(slot: 1, version: "2.0.0.7", hash: Data(repeating: 0x22, count: 32), pending: true),
        ])
        let bytes = state.payload.encoded
        #expect(try ImageStateResponse(payload: CBORDecoder().decode(bytes)) == state)
        // "bootable": true twice, "active" once, "pending" once, no "confirmed"/"permanent".
        #expect(state.images[0].payload["confirmed"] == nil)
        #expect(state.description == "slot 0: 1.0.0 (11111111…) active; slot 1: 2.0.0.7 (22222222…) pending")
        let parameters = MCUmgrParameters(bufferSize: 2475, bufferCount: 4)
        #expect(try MCUmgrParameters(payload: parameters.payload) == parameters)
    }

    /// Upload requests are written in place (``ImageUploadRequest/frame(header:)``), everything
    /// else through ``CBOR``: the two must agree byte for byte on every field combination, on
    /// integers at each head-length boundary and on data lengths around them.
    @Test func uploadFramesWrittenInPlaceMatchTheGeneralEncoder() {
        var generator = SeededRandom(seed: 0x5EED)
        let integers = [0, 1, 23, 24, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, Int.max, -1, -24, -25, -256, -257, Int.min]
        let dataLengths = [0, 1, 23, 24, 255, 256, 1_000, 65_400]
        for round in 0..<400 {
            let pick = { (values: [Int]) -> Int in values[Int(generator.next() % UInt64(values.count))] }
            let dataLength = round < dataLengths.count ? dataLengths[round] : pick(dataLengths)
            let request = ImageUploadRequest(
                image: generator.next() % 2 == 0 ? nil : pick(integers),
                length: generator.next() % 2 == 0 ? nil : pick(integers),
                offset: pick(integers),
                sha: generator.next() % 2 == 0 ? nil : Data((0..<Int(generator.next() % 40)).map { UInt8(truncatingIfNeeded: $0 &* 37) }),
                data: Data((0..<dataLength).map { UInt8(truncatingIfNeeded: $0 &+ round) }),
                upgrade: generator.next() % 3 == 0 ? nil : generator.next() % 2 == 0
            )
            let sequence = UInt8(truncatingIfNeeded: round)
            let general = SMPMessage(operation: .write, group: 1, command: 1, sequence: sequence, payload: request.payload).encoded
            #expect(MCUmgrRequest.upload(request).encoded(sequence: sequence) == general, "\(request.payload)")
            #expect(request.payloadLength == request.payload.encodedLength)
        }
    }
}
