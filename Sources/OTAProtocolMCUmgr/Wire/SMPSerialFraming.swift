import Foundation
import OTACore
import Synchronization

/// SMP over a serial line, as Zephyr's console and UART transports frame it
/// (`mcumgr_serial.c`): each SMP message becomes `length ‖ message ‖ CRC-16/XMODEM` (both
/// big-endian, the length counting message and CRC), base64-encoded and cut into lines of at
/// most `lineLength` bytes; the first line starts with `0x06 0x09`, the others with `0x04 0x14`,
/// each ends with `\n`. Each line's base64 is a whole number of 4-character groups, so it
/// decodes alone.
public enum SMPSerialFraming {
    /// The first line's marker.
    public static let startMarker: [UInt8] = [0x06, 0x09]
    /// A continuation line's marker.
    public static let continuationMarker: [UInt8] = [0x04, 0x14]
    /// Zephyr's default line length (`CONFIG_UART_MCUMGR_RX_BUF_SIZE` 128, less one), as smpclient
    /// uses.
    public static let defaultLineLength = 127

    /// What a device's reassembly buffer (`buf_size`) holds besides the SMP message: the frame's
    /// 2-byte length and 2-byte CRC-16. A real Zephyr server (4.4.0, `qemu_cortex_m0`, `buf_size`
    /// 384) dropped an upload request of 383 bytes in silence and took 380.
    public static let bufferOverhead = 4

    /// CRC-16/XMODEM (polynomial 0x1021, initial 0, no reflection), what the frame's CRC is.
    public static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    /// The lines for one SMP message.
    public static func encode(_ message: Data, lineLength: Int = defaultLineLength) -> Data {
        precondition(lineLength >= 8)
        let crc = crc16(message)
        var body = Data()
        let length = message.count + 2
        body.append(contentsOf: [UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        body.append(message)
        body.append(contentsOf: [UInt8(crc >> 8), UInt8(crc & 0xFF)])
        let text = Array(body.base64EncodedData())
        let perLine = (lineLength - 4) / 4 * 4
        var lines = Data()
        var position = 0
        repeat {
            lines.append(contentsOf: position == 0 ? startMarker : continuationMarker)
            let end = min(position + perLine, text.count)
            lines.append(contentsOf: text[position..<end])
            lines.append(0x0A)
            position = end
        } while position < text.count
        return lines
    }
}

/// Why serial bytes were not an SMP message.
public enum SMPSerialFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A line's base64 does not decode.
    case badBase64
    /// The frame's CRC-16 differs from its content's.
    case badCRC(expected: UInt16, actual: UInt16)
    /// The frame declares fewer than 2 bytes (no room for its CRC), or more than it received.
    case badLength(Int)
    /// A continuation line came without a start line.
    case unexpectedContinuation

    public var description: String {
        switch self {
        case .badBase64: "an SMP serial line is not base64"
        case .badCRC(let expected, let actual):
            "an SMP serial frame's CRC-16 is \(Hex.number(actual, digits: 4)), its content's \(Hex.number(expected, digits: 4))"
        case .badLength(let length): "an SMP serial frame declares \(length) bytes, which its lines do not hold"
        case .unexpectedContinuation: "an SMP serial continuation line came without a start line"
        }
    }
}

/// Turns serial bytes back into SMP messages: lines are split at `\n` (a `\r` before it is
/// dropped), lines without a marker (a console's log output) are skipped, a start line begins a
/// frame, continuation lines extend it, and a frame whose length is reached is checked against its
/// CRC. A bad frame is dropped and reported; what follows is read afresh.
public struct SMPSerialDecoder: Sendable {
    /// The longest line kept while waiting for its `\n`; longer ones are dropped.
    public var maximumLine = 4096
    private var line: [UInt8] = []
    private var frame: [UInt8]?
    private var declared = 0

    /// A decoder.
    public init() {}

    /// What one call decoded: whole messages, and the frames it dropped.
    public struct Output: Sendable, Hashable {
        /// SMP messages (header and payload), in order.
        public var messages: [Data] = []
        /// Frames dropped, with why.
        public var errors: [SMPSerialFrameError] = []
    }

    /// Takes bytes as they arrive.
    public mutating func append(_ bytes: Data) -> Output {
        var output = Output()
        for byte in bytes {
            guard byte == 0x0A else {
                if line.count < maximumLine { line.append(byte) }
                continue
            }
            var text = line
            line.removeAll(keepingCapacity: true)
            if text.last == 0x0D { text.removeLast() }
            take(text, into: &output)
        }
        return output
    }

    private mutating func take(_ text: [UInt8], into output: inout Output) {
        guard text.count >= 2 else { return }
        let marker = Array(text[0..<2])
        let isStart = marker == SMPSerialFraming.startMarker
        guard isStart || marker == SMPSerialFraming.continuationMarker else { return }  // console output
        if !isStart, frame == nil {
            output.errors.append(.unexpectedContinuation)
            return
        }
        guard let decoded = Data(base64Encoded: Data(text[2...])) else {
            frame = nil
            output.errors.append(.badBase64)
            return
        }
        if isStart {
            guard decoded.count >= 2 else {
                frame = nil
                output.errors.append(.badLength(decoded.count))
                return
            }
            declared = Int(decoded[decoded.startIndex]) << 8 | Int(decoded[decoded.startIndex + 1])
            frame = Array(decoded.dropFirst(2))
        } else {
            frame?.append(contentsOf: decoded)
        }
        guard let current = frame, current.count >= declared else { return }
        frame = nil
        guard declared >= 2, current.count == declared else {
            output.errors.append(.badLength(declared))
            return
        }
        let message = current[0..<(declared - 2)]
        let crc = UInt16(current[declared - 2]) << 8 | UInt16(current[declared - 1])
        let expected = SMPSerialFraming.crc16(message)
        guard crc == expected else {
            output.errors.append(.badCRC(expected: expected, actual: crc))
            return
        }
        output.messages.append(Data(message))
    }
}

/// An ``SMPSerialDecoder`` behind a lock, for a transport's reading thread: bytes in, messages
/// out, bad frames dropped.
public final class SMPSerialStreamDecoder: Sendable {
    private let decoder = Mutex(SMPSerialDecoder())

    /// A decoder.
    public init() {}

    /// The whole messages `bytes` complete.
    public func messages(from bytes: Data) -> [Data] {
        decoder.withLock { $0.append(bytes).messages }
    }
}
