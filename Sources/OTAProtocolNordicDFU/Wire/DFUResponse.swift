import Foundation
import OTACore

/// A Control Point notification: `60 op result [payload]`, or `60 op 0B ext`.
public struct DFUResponse: Sendable, Hashable {
    /// The request it answers.
    public var opCode: UInt8
    /// The result.
    public var result: DFUResultCode
    /// The extended error, when `result` is 0x0B.
    public var extendedError: DFUExtendedError?
    /// For Select: max object size, offset, CRC. For Calculate Checksum (and PRN): offset, CRC.
    public var values: [UInt32]

    /// Creates a response.
    public init(opCode: UInt8, result: DFUResultCode, extendedError: DFUExtendedError? = nil, values: [UInt32] = []) {
        self.opCode = opCode
        self.result = result
        self.extendedError = extendedError
        self.values = values
    }

    /// A success response to `opCode` with `values`.
    public static func success(_ opCode: DFUOpCode, _ values: [UInt32] = []) -> DFUResponse {
        DFUResponse(opCode: opCode.rawValue, result: .success, values: values)
    }

    /// The bytes on the wire.
    public var encoded: Data {
        var writer = ByteWriter(capacity: 15)
        writer.u8(DFUOpCode.response.rawValue)
        writer.u8(opCode)
        writer.u8(result.rawValue)
        if let extendedError { writer.u8(extendedError.rawValue) }
        for value in values { writer.u32(value) }
        return writer.data
    }

    /// Parses a notification; `nil` when it is not a well-formed response. Payload sizes are
    /// checked per op code: Select carries 3 values, Calculate Checksum 2, others none.
    public init?(decoding data: Data) {
        // Read in place: a response comes per request, several per object.
        guard
            let decoded = data.withUnsafeBytes({ raw -> (opCode: UInt8, result: DFUResultCode, extended: DFUExtendedError?, values: [UInt32])? in
                guard raw.count >= 3, raw[0] == DFUOpCode.response.rawValue else { return nil }
                let opCode = raw[1]
                let result = DFUResultCode(rawValue: raw[2])
                if result == .extendedError {
                    guard raw.count == 4 else { return nil }
                    return (opCode, result, DFUExtendedError(rawValue: raw[3]), [])
                }
                let expected: Int =
                    switch (DFUOpCode(rawValue: opCode), result) {
                    case (.select, .success): 3
                    case (.calculateChecksum, .success): 2
                    default: 0
                    }
                guard raw.count == 3 + 4 * expected else { return nil }
                var values: [UInt32] = []
                if expected > 0 {
                    values.reserveCapacity(expected)
                    for index in 0..<expected { values.append(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 3 + 4 * index, as: UInt32.self))) }
                }
                return (opCode, result, nil, values)
            })
        else { return nil }
        opCode = decoded.opCode
        result = decoded.result
        extendedError = decoded.extended
        values = decoded.values
    }

    /// The failure in words: "Execute failed: 0x0B (extended error) 0x0C (verification failed …)".
    public func failureDescription(for request: String) -> String {
        if let extendedError { return "\(request) failed: extended error \(extendedError)" }
        return "\(request) failed: \(result)"
    }
}
