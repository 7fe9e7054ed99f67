import Foundation
import OTACore

/// What Select reported for an object type: the largest object the bootloader takes, and how
/// many bytes it holds with their CRC-32. For data objects the offset and CRC run over the whole
/// image, not one object.
///
/// ``NordicDFUClient`` hands the Select(command) and Select(data) answers it read while finding
/// the resume point to the run that follows, as a ``NordicDFUCheckpoint``.
public struct DFUObjectSelection: Sendable, Hashable {
    /// The largest object the bootloader accepts (data: one flash page, 4096 on nRF52).
    public var maximumSize: Int
    /// Bytes the bootloader holds.
    public var offset: Int
    /// CRC-32 of those bytes.
    public var crc: UInt32
}

extension DFUObjectSelection {
    /// The values of a successful Select response (max size, offset, CRC); `nil` for any other.
    public init?(_ response: DFUResponse) {
        guard response.opCode == DFUOpCode.select.rawValue, response.result == .success, response.values.count == 3 else { return nil }
        self.init(maximumSize: Int(response.values[0]), offset: Int(response.values[1]), crc: response.values[2])
    }
}

/// How a Control Point notification relates to the request it should answer: the answer, a late
/// packet receipt to skip, or a protocol error. Shared by the state machine and the resume-point
/// query, so both read the wire the same way.
enum DFUAnswer {
    /// The response to the request (success or not).
    case response(DFUResponse)
    /// A packet receipt notification that arrived after its packets: skip it and keep waiting.
    case lateReceipt
    /// Not an answer to the request.
    case malformed(OTAError)

    /// Reads `notification` as the answer to `request`.
    init(_ notification: Data, to request: DFURequest) {
        guard let response = DFUResponse(decoding: notification) else {
            self = .malformed(
                OTAError(
                    .malformedResponse,
                    "malformed notification on the DFU Control Point while waiting for the response to \(request): \(notification.count) bytes"
                )
            )
            return
        }
        // A packet receipt is a Calculate Checksum response; one for a packet the bootloader
        // refused (0x03 too long for the object, 0x08 no init packet) is not the answer to a
        // Calculate Checksum request, which takes no parameter and needs no permission.
        if request == .calculateChecksum, response.opCode == DFUOpCode.calculateChecksum.rawValue,
            response.result == .invalidParameter || response.result == .operationNotPermitted
        {
            self = .lateReceipt
            return
        }
        guard response.opCode == request.opCode.rawValue else {
            if response.opCode == DFUOpCode.calculateChecksum.rawValue {
                self = .lateReceipt
            } else {
                self = .malformed(
                    OTAError(.malformedResponse, "the bootloader answered op code 0x\(Hex.digits(response.opCode, uppercase: false)) to \(request)"))
            }
            return
        }
        self = .response(response)
    }
}
