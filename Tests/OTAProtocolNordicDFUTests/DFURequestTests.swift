import Foundation
import OTACore
import OTAProtocolNordicDFU
import Testing

/// Control Point requests on the wire: each op code's request has one length, which encoding
/// produces and decoding demands.
@Suite struct DFURequestTests {
    static let requests: [DFURequest] = [
        .create(.data, size: 4096), .create(.command, size: 141), .create(.data, size: 0x0403_0201), .setPRN(12), .setPRN(0x0201),
        .calculateChecksum, .execute, .select(.command),
        .select(.data), .abort,
    ]

    @Test(arguments: requests)
    func everyRequestDecodesFromItsOwnBytesAndNoOtherLength(request: DFURequest) {
        let bytes = request.encoded
        #expect(bytes.first == request.opCode.rawValue)
        #expect(DFURequest(decoding: bytes) == request)
        #expect(DFURequest(decoding: bytes.dropLast()) == nil, "one byte short")
        #expect(DFURequest(decoding: bytes + [0x00]) == nil, "one byte over")
    }

    @Test func theWorkedExampleAndWhatIsNoRequest() {
        #expect(DFURequest.create(.data, size: 4096).encoded == Data([0x01, 0x02, 0x00, 0x10, 0x00, 0x00]))
        #expect(DFURequest(decoding: Data([0x60])) == nil, "Response starts no request")
        #expect(DFURequest(decoding: Data([0x60, 0x01, 0x01])) == nil)
        #expect(DFURequest(decoding: Data([0x06, 0x03])) == nil, "no object type 3")
        #expect(DFURequest(decoding: Data([0x05])) == nil, "no op code 5")
        #expect(DFURequest(decoding: Data()) == nil)
    }
}
