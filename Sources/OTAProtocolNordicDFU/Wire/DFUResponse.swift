import Foundation

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
        var bytes: [UInt8] = [DFUOpCode.response.rawValue, opCode, result.rawValue]
        if let extendedError { bytes.append(extendedError.rawValue) }
        for value in values { bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        return Data(bytes)
    }

    /// Parses a notification; `nil` when it is not a well-formed response. Payload sizes are
    /// checked per op code: Select carries 3 values, Calculate Checksum 2, others none.
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= 3, bytes[0] == DFUOpCode.response.rawValue else { return nil }
        opCode = bytes[1]
        result = DFUResultCode(rawValue: bytes[2])
        if result == .extendedError {
            guard bytes.count == 4 else { return nil }
            extendedError = DFUExtendedError(rawValue: bytes[3])
            values = []
            return
        }
        extendedError = nil
        let payload = Array(bytes[3...])
        let expected: Int =
            switch (DFUOpCode(rawValue: opCode), result) {
            case (.select, .success): 12
            case (.calculateChecksum, .success): 8
            default: 0
            }
        guard payload.count == expected else { return nil }
        values = stride(from: 0, to: payload.count, by: 4).map { start in
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(payload[start + $1]) << (8 * $1) }
        }
    }

    /// The failure in words: "Execute failed: 0x0B (extended error) 0x0C (verification failed …)".
    public func failureDescription(for request: String) -> String {
        if let extendedError { return "\(request) failed: extended error \(extendedError)" }
        return "\(request) failed: \(result)"
    }
}
