import Foundation
import FuzzSupport
import OTAProtocolMCUmgr

/// SMP frames: one whole message decoded (header and CBOR payload), and the same bytes fed to
/// the reassembler in fragments whose sizes the input's first byte chooses, as notifications
/// of a small MTU would deliver them; every frame it completes is decoded too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSMP(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = fuzzInput(start, count)
    consume(attempt({ try SMPMessage(decoding: data) }))
    // The header fields read alone (what the client reads of every answer) agree with the whole
    // header's decoding, on the input and on a slice of it (a non-zero start index).
    for bytes in [data, data.dropFirst()] {
        let header = SMPHeader(bytes)
        precondition(SMPHeader.sequence(of: bytes) == header?.sequence, "SMPHeader.sequence(of:) disagrees with the header")
        precondition(SMPHeader.payloadLength(of: bytes) == header.map { Int($0.payloadLength) }, "SMPHeader.payloadLength(of:) disagrees with the header")
    }
    guard let first = data.first else { return 0 }
    let fragmentLength = Int(first % 64) + 1
    var reassembler = SMPReassembler(maximumPayload: 2048)
    var rest = data.dropFirst()
    while !rest.isEmpty {
        let fragment = Data(rest.prefix(fragmentLength))
        rest = rest.dropFirst(fragment.count)
        guard let frames = attempt({ try reassembler.append(fragment) }) else {
            reassembler.reset()
            continue
        }
        for frame in frames {
            consume(attempt({ try SMPMessage(decoding: frame) }))
        }
    }
    return 0
}

@main
enum Main {
    static func main() { runFuzzer(fuzzSMP) }
}
