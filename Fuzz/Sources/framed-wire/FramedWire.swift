import FuzzSupport
import OTAProtocolFramed

/// The framed protocol's wire: notifications and the status read (decoded by the client),
/// commands and chunks of both versions (decoded by the device model).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFramedWire(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    if let notification = FramedNotification(decoding: data) {
        consume(notification)
        checkRoundTrip(notification, encoded: notification.encoded, decode: FramedNotification.init(decoding:), "FramedNotification")
    }
    if let status = FramedDeviceStatus(decoding: data) {
        consume(status)
        checkRoundTrip(status, encoded: status.encoded, decode: FramedDeviceStatus.init(decoding:), "FramedDeviceStatus")
    }
    if let (command, version) = FramedCommand.decode(data) {
        describe(command)
        consume(version)
        checkRoundTrip(command, encoded: command.encoded, decode: { FramedCommand.decode($0)?.command }, "FramedCommand")
    }
    if let chunk = FramedChunk.decode(data) {
        consume(chunk.payload.count)
        let again = FramedChunk.encode(offset: Int(chunk.offset), payload: chunk.payload)
        if let decoded = FramedChunk.decode(again), decoded.offset != chunk.offset || decoded.payload != chunk.payload {
            fatalError("FramedChunk: offset \(chunk.offset) with \(chunk.payload.count) bytes does not survive its encoding")
        }
    }
    if let compact = FramedChunk.decodeCompact(data) {
        consume(compact.payload.count)
        let again = FramedChunk.encodeCompact(sequence: Int(compact.sequence), payload: compact.payload, batchCRC: compact.batchCRC)
        if FramedChunk.decodeCompact(again) != compact {
            fatalError("FramedChunk: compact chunk \(compact.sequence) with \(compact.payload.count) bytes does not survive its encoding")
        }
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzFramedWire) }
}
