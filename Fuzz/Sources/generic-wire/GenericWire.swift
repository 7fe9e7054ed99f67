import FuzzSupport
import OTAProtocolGeneric

/// The generic protocol's wire: replies a device notifies (the client decodes them) and
/// commands a client writes (the device model decodes them).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGenericWire(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let reply = GenericReply(decoding: data) {
        consume(reply)
        checkRoundTrip(reply, encoded: reply.encoded, decode: GenericReply.init(decoding:), "GenericReply")
    }
    if let command = GenericCommand(decoding: data) {
        describe(command)
        checkRoundTrip(command, encoded: command.encoded, decode: GenericCommand.init(decoding:), "GenericCommand")
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzGenericWire) }
}
