import Foundation
import OTACore

/// The client's side of the Espressif exchange as a value type: one method per input, each
/// returning what to do next. No I/O: ``EspressifClient`` performs the actions, and the tests
/// drive it without a transport.
///
/// ```
/// idle ─start()─▶ starting ─accepted─▶ sector 0 ─success─▶ sector 1 … last ─success─▶ stopping ─accepted─▶ done
///                    │ rejected                │ error ACK or silence: the sector again,
///                    ▼                         │ from packet 0, at most `sectorRetries` times
///          clearing (STOP) ─any ACK─▶ starting again ─rejected─▶ failed
/// ```
///
/// A START the device rejects is answered once with STOP then START again: the component
/// rejects START while a session is open, and one may be left open by a connection that was lost.
public struct EspressifUpdateStateMachine: Sendable {
    /// One sector of the image.
    public struct Sector: Sendable, Hashable {
        /// Its index on the wire.
        public var index: UInt16
        /// The image bytes it carries.
        public var range: Range<Int>
    }

    /// Where the exchange stands.
    public enum State: Sendable, Hashable {
        case idle
        case starting
        case clearingSession
        case startingAgain
        case awaitingSectorAck(UInt16)
        case stopping
        case done
        case failed
    }

    /// What the driver must do next.
    public enum Action: Sendable {
        /// Write the command (with response) on the command characteristic, wait for its ACK
        /// and pass it to ``receiveCommandAck(_:)``.
        case sendCommand(EspressifCommand)
        /// Write the sector's packets on the firmware characteristic (from packet 0), then wait
        /// for its ACK: ``receiveSectorAck(_:)``, or ``sectorAckTimedOut()`` after a silence.
        /// `retry` says why it is sent again, `nil` the first time.
        case sendSector(Sector, retry: String?)
        /// Wait for another sector ACK (the last one was about another sector).
        case awaitSectorAck
        /// The device accepted STOP after the last sector.
        case finished
        /// The update failed.
        case fail(OTAError)
    }

    /// The current state.
    public private(set) var state: State = .idle
    /// Image bytes the device acknowledged.
    public private(set) var acknowledgedBytes = 0
    /// Sectors sent again so far.
    public private(set) var resentSectors = 0
    private let length: Int
    private let sectorRetries: Int
    private var retriesOfCurrent = 0

    /// Prepares an update of an image of `length` bytes (1 byte … 65 536 sectors).
    public init(length: Int, sectorRetries: Int = 3) {
        precondition(length > 0 && length <= Int(UInt16.max) * EspressifFirmwarePacket.sectorSize, "length out of range")
        self.length = length
        self.sectorRetries = sectorRetries
    }

    /// How many sectors the image takes.
    public var sectorCount: Int { (length + EspressifFirmwarePacket.sectorSize - 1) / EspressifFirmwarePacket.sectorSize }

    /// The sector at `index`.
    public func sector(_ index: Int) -> Sector {
        let start = index * EspressifFirmwarePacket.sectorSize
        return Sector(index: UInt16(index), range: start..<min(start + EspressifFirmwarePacket.sectorSize, length))
    }

    /// Begins the exchange: START with the total length.
    public mutating func start() -> Action {
        precondition(state == .idle, "start() called twice")
        state = .starting
        return .sendCommand(.start(length: UInt32(length)))
    }

    /// The device notified `bytes` on the command characteristic.
    public mutating func receiveCommandAck(_ bytes: Data) -> Action {
        guard let ack = EspressifCommandAck(decoding: bytes) else {
            return fail(
                .malformedResponse, "malformed command ACK (\(bytes.count) bytes \(Hex.bytes(bytes.prefix(20))); expected 20 with ID 0x0003 and a valid CRC-16)"
            )
        }
        switch state {
        case .starting, .startingAgain:
            guard ack.commandID == EspressifCommand.startID else { return outOfTurn(ack) }
            if ack.accepted {
                state = .awaitingSectorAck(0)
                return .sendSector(sector(0), retry: nil)
            }
            if state == .starting {
                state = .clearingSession
                return .sendCommand(.stop)
            }
            return fail(
                .deviceRejected,
                "device rejected START for \(length) bytes, again after STOP: the image may not fit its OTA partition (\(ack))")
        case .clearingSession:
            guard ack.commandID == EspressifCommand.stopID else { return outOfTurn(ack) }
            state = .startingAgain
            return .sendCommand(.start(length: UInt32(length)))
        case .stopping:
            guard ack.commandID == EspressifCommand.stopID else { return outOfTurn(ack) }
            guard ack.accepted else { return fail(.deviceRejected, "device rejected STOP after all \(length) bytes (\(ack)); run the update again") }
            state = .done
            return .finished
        default:
            return outOfTurn(ack)
        }
    }

    /// The device notified `bytes` on the firmware characteristic.
    public mutating func receiveSectorAck(_ bytes: Data) -> Action {
        guard case .awaitingSectorAck(let current) = state else {
            return fail(.malformedResponse, "sector ACK out of turn while \(state)")
        }
        guard let ack = EspressifSectorAck(decoding: bytes) else {
            return fail(.malformedResponse, "malformed sector ACK (\(bytes.count) bytes \(Hex.bytes(bytes.prefix(20))); expected 20 with a valid CRC-16)")
        }
        if ack.status == .success {
            // A success for another sector is an answer to a sector already resent: wait on.
            guard ack.sector == current else { return .awaitSectorAck }
            retriesOfCurrent = 0
            acknowledgedBytes = sector(Int(current)).range.upperBound
            let next = Int(current) + 1
            if next == sectorCount {
                state = .stopping
                return .sendCommand(.stop)
            }
            state = .awaitingSectorAck(UInt16(next))
            return .sendSector(sector(next), retry: nil)
        }
        guard Int(ack.expected) <= Int(current) else {
            return fail(.malformedResponse, "device asks for sector \(ack.expected) while sector \(current) is unacknowledged (\(ack))")
        }
        let code: OTAError.Code = ack.status == .crcError ? .verificationFailed : .deviceRejected
        return resend(ack.expected, because: "device answered \(ack)", code: code)
    }

    /// No sector ACK came within the response timeout: the sector goes again.
    public mutating func sectorAckTimedOut() -> Action {
        guard case .awaitingSectorAck(let current) = state else {
            return fail(.internal, "sectorAckTimedOut() while \(state)")
        }
        return resend(current, because: "no ACK for sector \(current)", code: .timeout)
    }

    private mutating func resend(_ index: UInt16, because reason: String, code: OTAError.Code) -> Action {
        retriesOfCurrent += 1
        guard retriesOfCurrent <= sectorRetries else {
            return fail(code, "\(reason), after sending it \(retriesOfCurrent) times")
        }
        resentSectors += 1
        state = .awaitingSectorAck(index)
        acknowledgedBytes = sector(Int(index)).range.lowerBound
        return .sendSector(sector(Int(index)), retry: "\(reason); sending sector \(index) again from packet 0")
    }

    private mutating func outOfTurn(_ ack: EspressifCommandAck) -> Action {
        fail(.malformedResponse, "unexpected \(ack) on the command characteristic while \(state)")
    }

    private mutating func fail(_ code: OTAError.Code, _ message: String) -> Action {
        state = .failed
        return .fail(OTAError(code, message))
    }
}
