import Foundation
import OTACore
import Synchronization

/// The device side of Espressif's `ble_ota` component, for the simulator (and for test
/// peripherals served through a real Bluetooth stack), in its three variants
/// (``EspressifVariant``), as docs/protocols/esp-ble-ota.md describes them:
///
/// - GATT: service 0x8018 with 0x8020 firmware, 0x8021 progress, 0x8022 command and 0x8023
///   customer; `ble_ota` declares Write + Indicate on 0x8020/0x8022 (Read + Indicate on 0x8021),
///   `ble_ota_raw` adds Write Without Response and Notify. ACKs go out as notifications, as the
///   component sends them.
/// - START: rejected while a session is open, for length 0, or larger than flash; `ble_ota_raw`
///   also rejects a frame that is not 20 bytes or fails its CRC and recommends a window of 1.
/// - STOP: rejected without a session; otherwise accepted, and the image counts as installed
///   when every byte arrived (``installedLength``).
/// - Packets: a wrong sector index gets a sector index error naming the expected sector
///   (Bluedroid still appends the packet's data, as the component does); a packet out of
///   sequence is logged and ignored (Bluedroid), marks the sector bad for a sector index error at
///   its 0xFF packet (NimBLE) or is answered at once with a payload length error (raw); the
///   sector CRC is checked by `ble_ota_raw` only (CRC error → the client sends the sector again).
///   Each good sector is erased and written to flash at `index × 4096`, then acknowledged.
/// - A lost connection discards the session (the notes do not say whether the component keeps
///   it; `sessionSurvivesDisconnect` models a device that does).
public final class EspressifDeviceModel: DeviceModel {
    private struct Session {
        var length = 0
        var expectedSector: UInt16 = 0
        /// The sector's bytes so far: an array, which takes a packet's payload in place (through
        /// its raw bytes: appending the `Data` itself goes byte by byte) for less than
        /// `Data.append` costs.
        var buffer: [UInt8] = []
        var expectedSequence: UInt8 = 0
        var sectorBad = false
        var written = 0

        mutating func resetSector() {
            buffer.removeAll(keepingCapacity: true)
            buffer.reserveCapacity(EspressifFirmwarePacket.sectorSize + 256)
            expectedSequence = 0
            sectorBad = false
        }
    }

    private struct State {
        var session: Session?
        var installedLength: Int?
        var log: [String] = []
    }

    /// The GATT layout.
    public let profile: EspressifGATTProfile
    /// The implementation modelled.
    public let variant: EspressifVariant
    /// Whether an open session survives a lost connection.
    public let sessionSurvivesDisconnect: Bool
    private let state = Mutex(State())

    /// Creates a device.
    public init(profile: EspressifGATTProfile = EspressifGATTProfile(), variant: EspressifVariant = .bluedroid, sessionSurvivesDisconnect: Bool = false) {
        self.profile = profile
        self.variant = variant
        self.sessionSurvivesDisconnect = sessionSurvivesDisconnect
    }

    /// The length of the last image received completely and stopped, as the app would hand it
    /// to `esp_ota_end`; `nil` before any.
    public var installedLength: Int? { state.withLock { $0.installedLength } }
    /// Whether a session (START accepted, no STOP yet) is open.
    public var sessionOpen: Bool { state.withLock { $0.session != nil } }
    /// What the component would log (ignored packets, errors answered).
    public var log: [String] { state.withLock { $0.log } }

    public var services: [GATTServiceDefinition] {
        let exchange: CharacteristicProperties = variant == .raw ? [.write, .writeWithoutResponse, .notify, .indicate] : [.write, .indicate]
        let progress: CharacteristicProperties = variant == .raw ? [.read, .write, .notify, .indicate] : [.read, .indicate]
        return [
            GATTServiceDefinition(
                uuid: profile.service,
                characteristics: [
                    .init(uuid: profile.firmwareCharacteristic, properties: exchange),
                    .init(uuid: EspressifGATTProfile.progressCharacteristic, properties: progress),
                    .init(uuid: profile.commandCharacteristic, properties: exchange),
                    .init(uuid: EspressifGATTProfile.customerCharacteristic, properties: exchange),
                ]
            )
        ]
    }

    public func disconnected() {
        guard !sessionSurvivesDisconnect else { return }
        state.withLock { state in
            if state.session != nil { state.log.append("disconnected: session discarded") }
            state.session = nil
        }
    }

    public func rebooted() {
        state.withLock { state in
            state.session = nil
            state.log.append("rebooted")
        }
    }

    public func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        guard characteristic == CharacteristicID(service: profile.service, characteristic: EspressifGATTProfile.progressCharacteristic) else {
            return .failure(.readNotPermitted)
        }
        let percent: UInt8 = state.withLock { state in
            guard let session = state.session, session.length > 0 else { return state.installedLength == nil ? 0 : 100 }
            return UInt8(session.written * 100 / session.length)
        }
        return .success(Data([percent]))
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        switch characteristic {
        case profile.firmware:
            if let reply = receive(value, flash: peripheral.flash) { peripheral.notify(reply.encoded, on: profile.firmware) }
            return .success
        case profile.command:
            if let reply = command(value, flash: peripheral.flash) { peripheral.notify(reply.encoded, on: profile.command) }
            return .success
        default:
            return .success
        }
    }

    // MARK: - Commands

    private func command(_ value: Data, flash: any FlashStorage) -> EspressifCommandAck? {
        state.withLock { state in
            guard let command = EspressifCommand(decoding: value, strict: variant == .raw) else {
                state.log.append("command frame of \(value.count) bytes refused")
                guard variant == .raw, value.count >= 2 else { return nil }
                return EspressifCommandAck(commandID: UInt16(value[value.startIndex]) | UInt16(value[value.startIndex + 1]) << 8, status: 1)
            }
            switch command {
            case .start(let length):
                guard state.session == nil, length > 0, Int(length) <= flash.capacity else {
                    state.log.append("START (\(length) bytes) rejected: " + (state.session != nil ? "already started" : "bad length"))
                    return EspressifCommandAck(commandID: command.id, status: 1)
                }
                state.session = Session(length: Int(length))
                return EspressifCommandAck(commandID: command.id, status: 0, window: variant == .raw ? 1 : 0)
            case .stop:
                guard let session = state.session else {
                    state.log.append("STOP rejected: not started")
                    return EspressifCommandAck(commandID: command.id, status: 1)
                }
                state.session = nil
                if session.written == session.length {
                    state.installedLength = session.length
                } else {
                    state.log.append("STOP after \(session.written) of \(session.length) bytes: esp_ota_end would fail")
                }
                return EspressifCommandAck(commandID: command.id, status: 0)
            }
        }
    }

    // MARK: - Firmware packets

    private func receive(_ value: Data, flash: any FlashStorage) -> EspressifSectorAck? {
        state.withLock { state in
            guard var session = state.session else {
                state.log.append("firmware packet without a session ignored")
                return nil
            }
            // Taken out while it changes, so that its sector buffer has one owner and a packet
            // appends to it in place rather than copying the sector so far.
            state.session = nil
            defer { state.session = session }
            guard let packet = EspressifFirmwarePacket(decoding: value) else {
                state.log.append("firmware write of \(value.count) bytes ignored")
                return nil
            }
            let sectorSize = EspressifFirmwarePacket.sectorSize
            let lastSector = UInt16((session.length - 1) / sectorSize)
            let tolerated = variant != .raw && packet.sector == 0xFFFF && session.expectedSector == lastSector
            if packet.sector != session.expectedSector && !tolerated {
                state.log.append("packet of sector \(packet.sector) while expecting sector \(session.expectedSector)")
                if variant == .bluedroid {
                    packet.payload.withUnsafeBytes { session.buffer.append(contentsOf: $0) }
                } else {
                    session.resetSector()
                }
                return EspressifSectorAck(sector: packet.sector, status: .sectorIndexError, expected: session.expectedSector)
            }
            let sector = session.expectedSector
            guard packet.isLast else {
                guard packet.sequence == session.expectedSequence else {
                    state.log.append("packet \(packet.sequence) of sector \(sector) out of sequence (expected \(session.expectedSequence))")
                    switch variant {
                    case .bluedroid:
                        return nil
                    case .nimble:
                        session.sectorBad = true
                        return nil
                    case .raw:
                        session.resetSector()
                        return EspressifSectorAck(sector: packet.sector, status: .payloadLengthError, expected: sector)
                    }
                }
                packet.payload.withUnsafeBytes { session.buffer.append(contentsOf: $0) }
                session.expectedSequence &+= 1
                return nil
            }
            let start = Int(sector) * sectorSize
            let sectorLength = min(sectorSize, session.length - start)
            var data: Data
            switch variant {
            case .bluedroid:
                // The CRC bytes are copied with the data; the app keeps the sector's length.
                data = Data(session.buffer) + packet.payload
                data = Data(data.prefix(sectorLength))
                if data.count < sectorLength { data.append(Data(count: sectorLength - data.count)) }
            case .nimble, .raw:
                data = Data(session.buffer) + packet.payload.dropLast(2)
            }
            if variant == .nimble, session.sectorBad {
                session.resetSector()
                return EspressifSectorAck(sector: packet.sector, status: .sectorIndexError, expected: sector)
            }
            if variant == .raw {
                guard packet.payload.count >= 2, data.count == sectorLength else {
                    state.log.append("sector \(sector): \(data.count) bytes, expected \(sectorLength)")
                    session.resetSector()
                    return EspressifSectorAck(sector: packet.sector, status: .payloadLengthError, expected: sector)
                }
                let tail = [UInt8](packet.payload.suffix(2))
                guard EspressifCRC16.checksum(data) == UInt16(tail[0]) | UInt16(tail[1]) << 8 else {
                    state.log.append("sector \(sector): CRC error")
                    session.resetSector()
                    return EspressifSectorAck(sector: packet.sector, status: .crcError, expected: sector)
                }
            }
            let kept = Data(data.prefix(sectorLength))
            do {
                let eraseEnd = min(flash.capacity, start + max(sectorSize, flash.sectorSize))
                try flash.erase(start..<eraseEnd)
                try flash.write(kept, at: start)
            } catch {
                state.log.append("sector \(sector): flash failed: \(error)")
                session.resetSector()
                return nil
            }
            session.written = start + kept.count
            session.expectedSector = sector &+ 1
            session.resetSector()
            return EspressifSectorAck(sector: packet.sector, status: .success, expected: session.expectedSector)
        }
    }
}
