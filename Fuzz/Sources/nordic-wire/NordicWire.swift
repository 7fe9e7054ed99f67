import FuzzSupport
import OTAProtocolNordicDFU

/// Nordic Secure DFU's wire: control-point responses (decoded by the client), requests and
/// buttonless requests (decoded by the device model).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNordicWire(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let response = DFUResponse(decoding: data) {
        consume(response)
        consume(response.failureDescription(for: "fuzz"))
        checkRoundTrip(response, encoded: response.encoded, decode: DFUResponse.init(decoding:), "DFUResponse")
    }
    if let request = DFURequest(decoding: data) {
        describe(request)
        checkRoundTrip(request, encoded: request.encoded, decode: DFURequest.init(decoding:), "DFURequest")
    }
    if let request = ButtonlessRequest(decoding: data) {
        consume(request)
        checkRoundTrip(request, encoded: request.encoded, decode: ButtonlessRequest.init(decoding:), "ButtonlessRequest")
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzNordicWire) }
}
