import Foundation
import OTACore

/// The session journal a framed device keeps in the last sector of its slot, so that a session
/// survives reboots (see "Persistence" in docs/protocols/framed.md).
///
/// Layout: a 16-byte header (`FOTA`, size, CRC, version) then 8-byte records (offset, running
/// CRC) appended in order; the last record that is not all `FF` wins; offset `0xFFFFFFFE` marks
/// the image installed.
struct FramedJournal {
    /// What the journal says after a boot.
    struct Recovered: Equatable {
        var identity: SessionIdentity
        var offset: Int
        var runningCRC: UInt32
        var installed: Bool
    }

    static let magic: [UInt8] = Array("FOTA".utf8)
    static let headerLength = 16
    static let recordLength = 8
    static let installedMarker: UInt32 = 0xFFFF_FFFE

    /// Where the journal sector starts: the last sector of the slot.
    let base: Int
    let sectorSize: Int
    /// Where the next record goes.
    private(set) var nextRecord: Int

    init(flash: any FlashStorage) {
        sectorSize = flash.sectorSize
        base = flash.capacity - flash.sectorSize
        nextRecord = Self.headerLength
    }

    /// Bytes of the slot available to images.
    var imageCapacity: Int { base }

    /// Reads the journal at boot; `nil` when it holds no session.
    mutating func recover(from flash: any FlashStorage) -> Recovered? {
        let sector = [UInt8](flash.read(base..<(base + sectorSize)))
        guard Array(sector[0..<4]) == Self.magic else {
            nextRecord = Self.headerLength
            return nil
        }
        var header = ByteReader(Data(sector[4..<16]))
        let identity = SessionIdentity(size: header.u32()!, crc: header.u32()!, version: header.u32()!)
        var recovered = Recovered(identity: identity, offset: 0, runningCRC: 0, installed: false)
        var position = Self.headerLength
        while position + Self.recordLength <= sectorSize {
            let record = sector[position..<(position + Self.recordLength)]
            if record.allSatisfy({ $0 == 0xFF }) { break }
            var reader = ByteReader(Data(record))
            let offset = reader.u32()!
            let crc = reader.u32()!
            if offset == Self.installedMarker {
                recovered.installed = true
                recovered.offset = Int(identity.size)
                recovered.runningCRC = identity.crc
            } else if offset <= identity.size {
                recovered.offset = Int(offset)
                recovered.runningCRC = crc
            }
            position += Self.recordLength
        }
        nextRecord = position
        return recovered
    }

    /// Starts a journal for a new session: erase, then write the header.
    mutating func start(_ identity: SessionIdentity, on flash: any FlashStorage) throws(FlashError) {
        try flash.erase(base..<(base + sectorSize))
        var writer = ByteWriter(capacity: Self.headerLength)
        for byte in Self.magic { writer.u8(byte) }
        writer.u32(identity.size)
        writer.u32(identity.crc)
        writer.u32(identity.version)
        try flash.write(writer.data, at: base)
        nextRecord = Self.headerLength
    }

    /// Appends a record; when the sector is full, starts it over with the header and this record.
    mutating func record(offset: UInt32, runningCRC: UInt32, identity: SessionIdentity, on flash: any FlashStorage) throws(FlashError) {
        if nextRecord + Self.recordLength > sectorSize {
            try start(identity, on: flash)
        }
        var writer = ByteWriter(capacity: Self.recordLength)
        writer.u32(offset)
        writer.u32(runningCRC)
        try flash.write(writer.data, at: base + nextRecord)
        nextRecord += Self.recordLength
    }

    /// Discards the session.
    mutating func clear(on flash: any FlashStorage) throws(FlashError) {
        try flash.erase(base..<(base + sectorSize))
        nextRecord = Self.headerLength
    }
}
