import CFramedReferenceDevice
import Foundation
import OTACore
import OTATransportSimulator
import Synchronization
import Testing

/// Drives the C reference device (`Examples/framed-reference-device/core`) directly through
/// ``FramedReferenceDevice``, with a fake peripheral and an in-memory NOR flash, and checks it
/// byte for byte against docs/protocols/framed.md.
@Suite struct FramedReferenceDeviceTests {
    // MARK: - CRC-32

    @Test func crc32MatchesTheSpecVectors() {
        #expect(crc([]) == 0x0000_0000)
        #expect(crc(Array("hello world".utf8)) == 0x0D4A_1185)
        #expect(crc([0x00]) == 0xD202_EF8D)
        #expect(crc([0x01, 0x02, 0x03]) == 0x55BC_801D)
        #expect(framed_ota_crc32(0, nil, 0) == 0)
    }

    @Test func crc32ContinuesLikeZlib() {
        let hello = Array("hello ".utf8)
        let world = Array("world".utf8)
        #expect(framed_ota_crc32(crc(hello), world, world.count) == 0x0D4A_1185)
        let image = makeImage(10_000, seed: 3)
        #expect(crc(image) == CRC32.checksum(image))
        #expect(framed_ota_crc32(crc(Array(image[..<4321])), Array(image[4321...]), image.count - 4321) == crc(image))
    }

    // MARK: - GATT and Status

    @Test func exposesTheSpecifiedCharacteristics() throws {
        let bench = Bench()
        let service = try #require(bench.device.services.first)
        #expect(bench.device.services.count == 1)
        #expect(service.uuid == GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        let table = service.characteristicTable
        #expect(table[bench.device.dataCharacteristic] == .writeWithoutResponse)
        #expect(table[bench.device.controlCharacteristic] == [.write, .notify])
        #expect(table[bench.device.statusCharacteristic] == .read)
        #expect(bench.device.dataCharacteristic.characteristic == GATTUUID("4f544201-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        #expect(bench.device.controlCharacteristic.characteristic == GATTUUID("4f544202-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        #expect(bench.device.statusCharacteristic.characteristic == GATTUUID("4f544203-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        let peripheral = bench.peripheral
        guard case .failure(.readNotPermitted) = bench.device.read(bench.device.controlCharacteristic, peripheral: peripheral) else {
            Issue.record("Control must not be readable")
            return
        }
        #expect(bench.device.write(Data([0x01]), to: bench.device.statusCharacteristic, kind: .withResponse, peripheral: peripheral) == .writeNotPermitted)
    }

    @Test func idleStatusIsAllZeroButVersionAndMaxBatch() {
        let bench = Bench()
        #expect(bench.status() == [0x01, 0x00] + zeros(20) + [0x10, 0x00])
    }

    // MARK: - BEGIN

    @Test func beginReplyMatchesTheWorkedExample() {
        // Image of 1000 bytes, CRC-32 0x12345678, version 7, batch 4.
        let bench = Bench(sectors: 8)
        let (att, replies) = bench.control(hex("10 01 E8030000 78563412 07000000 0400"))
        #expect(att == .success)
        #expect(replies == [hex("90 00 01 00000000 0400")])
        #expect(bench.status() == hex("01 01 00000000 00000000 E8030000 78563412 07000000 1000"))
    }

    @Test(arguments: [(UInt16(1), UInt16(1)), (16, 16), (17, 16), (64, 16), (1024, 16), (4000, 16)])
    func beginClampsTheBatch(requested: UInt16, granted: UInt16) {
        let bench = Bench()
        #expect(bench.begin(size: 100, crc: 1, version: 0, batch: requested) == [0x90, 0x00, 0x01] + le32(0) + le16(granted))
    }

    @Test func beginWithInvalidParametersIsRefused() {
        let bench = Bench()
        let invalid: [UInt8] = [0x90, 0x06, 0x00] + le32(0) + le16(0)
        #expect(bench.control([0x10, 0x03] + le32(100) + le32(1) + le32(0) + le16(4)).replies == [invalid])  // version 3
        #expect(bench.begin(size: 0, crc: 1, version: 0, batch: 4) == invalid)
        #expect(bench.begin(size: 100, crc: 1, version: 0, batch: 0) == invalid)
        #expect(bench.status()[1] == 0x00)
    }

    @Test func imageLargerThanTheSlotIsRefused() {
        let bench = Bench(sectors: 8, sectorSize: 256)  // the journal takes the last sector: 1792 bytes for the image
        let started = bench.begin(size: 1000, crc: 1, version: 1, batch: 4)
        #expect(started == [0x90, 0x00, 0x01] + le32(0) + le16(4))
        let tooLarge = bench.begin(size: 1793, crc: 2, version: 1, batch: 4)
        #expect(tooLarge == [0x90, 0x04, 0x01] + le32(0) + le16(0))
        // The refused BEGIN left the session alone.
        #expect(bench.status() == [0x01, 0x01] + le32(0) + le32(0) + le32(1000) + le32(1) + le32(1) + le16(16))
        #expect(bench.begin(size: 1792, crc: 3, version: 1, batch: 4)?[1] == 0x00)
    }

    @Test func malformedCommandsAreRejectedAtTheATTLevel() {
        let bench = Bench()
        let begin = beginCommand(size: 100, crc: 1, version: 0, batch: 4)
        #expect(bench.control([]) == (.invalidPDU, []))
        #expect(bench.control([0x13]) == (.invalidPDU, []))
        #expect(bench.control([0x90]) == (.invalidPDU, []))
        #expect(bench.control(Array(begin.dropLast())) == (.invalidAttributeValueLength, []))
        #expect(bench.control(begin + [0x00]) == (.invalidAttributeValueLength, []))
        #expect(bench.control([0x11, 0x00]) == (.invalidAttributeValueLength, []))
        #expect(bench.control([0x12, 0x00]) == (.invalidAttributeValueLength, []))
        #expect(bench.status()[1] == 0x00)
    }

    // MARK: - Data, ACKs and NAKs

    @Test func inOrderChunksAreAckedEveryBatchAndAtTheEnd() {
        let bench = Bench(sectors: 8)
        let image = makeImage(1000, seed: 1)
        #expect(bench.begin(image, batch: 5) == [0x90, 0x00, 0x01] + le32(0) + le16(5))
        var acks: [[UInt8]] = []
        var chunks = 0
        for offset in stride(from: 0, to: image.count, by: 12) {
            let end = min(offset + 12, image.count)
            let notifications = bench.data(chunk(image, at: offset, length: end - offset))
            chunks += 1
            if chunks % 5 == 0 || end == image.count {
                #expect(notifications == [ack(image, end)], "after chunk \(chunks)")
            } else {
                #expect(notifications.isEmpty, "after chunk \(chunks)")
            }
            acks += notifications
        }
        #expect(chunks == 84)
        #expect(acks.count == 84 / 5 + 1)
        #expect(acks.last == [0xA0] + le32(1000) + le32(crc(image)))
        #expect(bench.flash.bytes(0..<1000) == image)
        #expect(bench.status() == [0x01, 0x02] + le32(1000) + le32(crc(image)) + le32(1000) + le32(crc(image)) + le32(7) + le16(16))
        #expect(bench.device.counters.acks == acks.count)
    }

    @Test func duplicateChunkIsDroppedSilently() {
        let bench = Bench()
        let image = makeImage(200, seed: 2)
        _ = bench.begin(image, batch: 4)
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 12, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 24, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 12, length: 12)).isEmpty)  // duplicate: no NAK, not counted
        #expect(bench.data(chunk(image, at: 0, length: 24)).isEmpty)  // duplicate with another size
        #expect(bench.data(chunk(image, at: 36, length: 12)) == [ack(image, 48)])
        // Duplicates of acked bytes: silent, and they do not bring the next ACK forward.
        #expect(bench.data(chunk(image, at: 36, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 0, length: 48)).isEmpty)
        #expect(bench.data(chunk(image, at: 48, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 60, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 72, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 84, length: 12)) == [ack(image, 96)])
        #expect(bench.device.counters.naks == 0)
    }

    @Test func gapCostsExactlyOneNAKThenTheStreamRecovers() {
        let bench = Bench()
        let image = makeImage(300, seed: 3)
        _ = bench.begin(image, batch: 4)
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        // Chunk at 12 lost; the rest of the window arrives.
        #expect(bench.data(chunk(image, at: 24, length: 12)) == [nak(2, image, 12)])
        #expect(bench.data(chunk(image, at: 36, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 48, length: 12)).isEmpty)
        // The app rewinds to 12.
        #expect(bench.data(chunk(image, at: 12, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 24, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 36, length: 12)) == [ack(image, 48)])
        // A chunk at `expected` cleared the outstanding NAK: the next gap is NAKed again.
        #expect(bench.data(chunk(image, at: 60, length: 12)) == [nak(2, image, 48)])
        #expect(bench.device.counters.naks == 2)
        #expect(bench.flash.bytes(0..<48) == Array(image[..<48]))
    }

    @Test func corruptChunkIsNAKedWithReason1() {
        let bench = Bench()
        let image = makeImage(300, seed: 4)
        _ = bench.begin(image, batch: 4)
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        var corrupt = chunk(image, at: 12, length: 12)
        corrupt[10] ^= 0x01
        #expect(bench.data(corrupt) == [nak(1, image, 12)])
        #expect(bench.data(corrupt).isEmpty)  // outstanding
        #expect(bench.flash.bytes(12..<24) == [UInt8](repeating: 0xFF, count: 12))
        #expect(bench.data(chunk(image, at: 12, length: 12)).isEmpty)
        // A write too short to be a chunk is answered like a corrupt one.
        #expect(bench.data(Array(chunk(image, at: 24, length: 12)[..<8])) == [nak(1, image, 24)])
        #expect(bench.data(chunk(image, at: 24, length: 12)).isEmpty)
        #expect(bench.data(chunk(image, at: 36, length: 12)) == [ack(image, 48)])
    }

    @Test func overlappingChunkKeepsOnlyTheBytesFromExpectedOn() {
        let bench = Bench()
        let image = makeImage(100, seed: 5)
        _ = bench.begin(image, batch: 16)
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        // After a reconnect the app uses 24-byte payloads from an older ACK at 6.
        #expect(bench.data(chunk(image, at: 6, length: 24)).isEmpty)
        #expect(bench.data(chunk(image, at: 30, length: 70)) == [ack(image, 100)])
        #expect(bench.flash.bytes(0..<100) == image)
    }

    @Test func chunksOutsideASessionAreNAKedWithReason4() {
        let bench = Bench()
        let image = makeImage(100, seed: 6)
        #expect(bench.data(chunk(image, at: 0, length: 12)) == [[0xA1, 0x04] + le32(0) + le32(0)])
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        _ = bench.begin(image, batch: 4)
        // Past the image end (CRC right, position impossible).
        #expect(bench.data(chunk(image + [0xAB, 0xCD], at: 96, length: 6)) == [nak(4, image, 0)])
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        // An offset where offset + length wraps around 2^32 (to 4, a "duplicate") is past the end.
        let payload = Array(image[..<12])
        #expect(bench.data(le32(UInt32(0xFFFF_FFF8)) + le32(crc(payload)) + payload) == [nak(4, image, 12)])
        #expect(bench.data(chunk(image, at: 12, length: 88)) == [ack(image, 100)])
        // Complete: duplicates stay silent, bytes past the end are NAKed.
        #expect(bench.data(chunk(image, at: 88, length: 12)).isEmpty)
        #expect(bench.data(le32(100) + le32(crc([0x00])) + [0x00]) == [nak(4, image, 100)])
    }

    // MARK: - COMMIT and ABORT

    @Test func commitInstallsTheCompleteImageAndReboots() {
        let bench = Bench()
        let image = makeImage(700, seed: 7)
        bench.send(image, from: 0, payload: 20, batch: 8)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
        #expect(bench.peripheral.reboots == [.milliseconds(300)])
        let installed: [UInt8] = [0x01, 0x03] + le32(700) + le32(crc(image)) + le32(700) + le32(crc(image)) + le32(7) + le16(16)
        #expect(bench.status() == installed)
        // The host reboots the device; the journal's installed marker survives.
        bench.reboot()
        #expect(bench.status() == installed)
        #expect(bench.begin(image, batch: 8) == [0x90, 0x00, 0x03] + le32(700) + le16(8))
        // A repeated COMMIT gets the same answer and no second reboot.
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
        #expect(bench.peripheral.reboots.isEmpty)
    }

    @Test func commitBeforeTheLastByteIsIncomplete() {
        let bench = Bench()
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x05]]))  // no session
        let image = makeImage(700, seed: 8)
        _ = bench.begin(image, batch: 4)
        _ = bench.data(chunk(image, at: 0, length: 100))
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x02]]))
        #expect(bench.peripheral.reboots.isEmpty)
        // The session goes on.
        #expect(bench.data(chunk(image, at: 100, length: 600)) == [ack(image, 700)])
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    @Test func commitReadsTheImageBackAndRestartsOnMismatch() {
        let bench = Bench()
        let image = makeImage(700, seed: 9)
        bench.send(image, from: 0, payload: 20, batch: 8)
        bench.flash.poke([image[300] ^ 0x40], at: 300)  // flash lost a bit behind the device's back
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x01]]))
        #expect(bench.peripheral.reboots.isEmpty)
        #expect(bench.status() == [0x01, 0x01] + le32(0) + le32(0) + le32(700) + le32(crc(image)) + le32(7) + le16(16))
        // Same identity again: from 0, and the image goes through this time.
        bench.send(image, from: 0, payload: 20, batch: 8)
        #expect(bench.flash.bytes(0..<700) == image)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    @Test func abortClearsTheSession() {
        let bench = Bench()
        let image = makeImage(700, seed: 10)
        _ = bench.begin(image, batch: 4)
        _ = bench.data(chunk(image, at: 0, length: 200))
        #expect(bench.control([0x12]) == (.success, [[0x92, 0x00]]))
        let idle = [0x01, 0x00] + zeros(20) + [0x10, 0x00]
        #expect(bench.status() == idle)
        #expect(bench.data(chunk(image, at: 200, length: 12)) == [[0xA1, 0x04] + le32(0) + le32(0)])
        bench.reboot()
        #expect(bench.status() == idle)
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(0) + le16(4))
        #expect(bench.control([0x12]) == (.success, [[0x92, 0x00]]))
        #expect(bench.control([0x12]) == (.success, [[0x92, 0x00]]))  // idle: still fine
    }

    // MARK: - Persistence

    @Test func statusAfterARebootShowsTheJournalOffset() {
        let bench = Bench()
        let image = makeImage(700, seed: 11)
        _ = bench.begin(image, batch: 4)
        for offset in stride(from: 0, to: 72, by: 12) {
            _ = bench.data(chunk(image, at: offset, length: 12))
        }
        // Acked 48; 72 received but not recorded.
        let at48: [UInt8] = [0x01, 0x01] + le32(48) + le32(crc(Array(image[..<48]))) + le32(700) + le32(crc(image)) + le32(7) + le16(16)
        #expect(bench.status() == at48)
        bench.reboot()
        #expect(bench.status() == at48)
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(48) + le16(4))
    }

    @Test func beginAfterADisconnectMakesTheCurrentOffsetDurable() {
        let bench = Bench()
        let image = makeImage(700, seed: 12)
        _ = bench.begin(image, batch: 4)
        _ = bench.data(chunk(image, at: 0, length: 30))
        bench.device.disconnected()
        #expect(bench.status()[2..<6] == le32(0)[...])
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(30) + le16(4))
        #expect(bench.status()[2..<10] == (le32(30) + le32(crc(Array(image[..<30]))))[...])
        bench.reboot()
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(30) + le16(4))
    }

    @Test func beginWithAnotherIdentityStartsOverAtZero() {
        let bench = Bench()
        let image = makeImage(700, seed: 13)
        bench.send(image, from: 0, payload: 20, batch: 4, through: 400)
        #expect(bench.status()[2..<6] == le32(400)[...])
        // Same size and CRC, another version: another session.
        #expect(bench.begin(size: 700, crc: crc(image), version: 8, batch: 4) == [0x90, 0x00, 0x01] + le32(0) + le16(4))
        let fresh: [UInt8] = [0x01, 0x01] + le32(0) + le32(0) + le32(700) + le32(crc(image)) + le32(8) + le16(16)
        #expect(bench.status() == fresh)
        bench.reboot()
        #expect(bench.status() == fresh)
        // The old identity is gone too.
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(0) + le16(4))
    }

    @Test func resumeMidSectorRewritesADirtyTail() {
        let bench = Bench(sectors: 8, sectorSize: 256)
        let image = makeImage(1500, seed: 14)
        // 12-byte chunks, batch 4: ACKs every 48 bytes. Stop after 288 (in sector 1) plus two
        // chunks that reached flash but not the journal.
        bench.send(image, from: 0, payload: 12, batch: 4, through: 312)
        #expect(bench.status()[2..<6] == le32(288)[...])
        bench.reboot()
        // Make the stale tail differ from the image, as a torn or foreign write would.
        bench.flash.poke([0x00, 0x11, 0x22, 0x33], at: 290)
        bench.flash.poke([0x5A], at: 500)
        bench.flash.clearLog()
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(288) + le16(4))
        #expect(bench.flash.erasedSectors == [256])
        #expect(bench.flash.bytes(256..<288) == Array(image[256..<288]))
        #expect(bench.flash.bytes(288..<512) == [UInt8](repeating: 0xFF, count: 224))
        // Continue with another chunk size.
        bench.send(image, from: 288, payload: 100, batch: 4)
        #expect(bench.flash.bytes(0..<1500) == image)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    @Test func resumeMidSectorLeavesACleanTailAlone() {
        let bench = Bench(sectors: 8, sectorSize: 256)
        let image = makeImage(1500, seed: 15)
        bench.send(image, from: 0, payload: 12, batch: 4, through: 288)
        bench.reboot()
        bench.flash.clearLog()
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(288) + le16(4))
        #expect(bench.flash.erasedSectors.isEmpty)
        bench.send(image, from: 288, payload: 12, batch: 4)
        #expect(bench.flash.bytes(0..<1500) == image)
    }

    @Test func chunksRightAfterARebootRepairTheTailToo() {
        // A device that rebooted and gets data before BEGIN (an app that skipped it) still
        // never programs over stale bytes.
        let bench = Bench(sectors: 8, sectorSize: 256)
        let image = makeImage(1500, seed: 16)
        bench.send(image, from: 0, payload: 12, batch: 4, through: 312)
        bench.reboot()
        bench.flash.poke([0x00], at: 300)
        // The journal does not keep the batch: the device uses its own maximum until a BEGIN.
        bench.send(image, from: 288, payload: 12, batch: 16, begin: false)
        #expect(bench.flash.bytes(0..<1500) == image)
    }

    @Test func journalStartsOverWhenItsSectorIsFull() {
        // A 256-byte journal sector holds (256 - 16) / 8 = 30 records.
        let bench = Bench(sectors: 4, sectorSize: 256)
        let image = makeImage(700, seed: 17)
        bench.send(image, from: 0, payload: 10, batch: 1, through: 400)  // 40 ACKs
        let base = 768
        #expect(bench.flash.bytes(base..<(base + 16)) == Array("FOTA".utf8) + le32(700) + le32(crc(image)) + le32(7))
        // Records 31...40 after the rollover: the first is the 31st ACK (310 bytes).
        #expect(bench.flash.bytes((base + 16)..<(base + 24)) == le32(310) + le32(crc(Array(image[..<310]))))
        #expect(bench.flash.bytes((base + 16 + 80)..<(base + 24 + 80)) == [UInt8](repeating: 0xFF, count: 8))
        bench.reboot()
        #expect(bench.status()[2..<10] == (le32(400) + le32(crc(Array(image[..<400]))))[...])
        bench.send(image, from: 400, payload: 10, batch: 1)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    @Test func tornJournalRecordIsSkipped() {
        let bench = Bench(sectors: 4, sectorSize: 256)
        let image = makeImage(700, seed: 18)
        bench.send(image, from: 0, payload: 10, batch: 2, through: 100)  // records for 20, 40, ... 100
        // Power was lost while the next record was programmed: its offset is garbage.
        bench.flash.poke(le32(0x00FF_FF00) + le32(0x1234_5678), at: 768 + 16 + 5 * 8)
        bench.reboot()
        #expect(bench.status()[2..<6] == le32(100)[...])
        #expect(bench.begin(image, batch: 2) == [0x90, 0x00, 0x01] + le32(100) + le16(2))
        bench.send(image, from: 100, payload: 10, batch: 2)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    // MARK: - Flash failures

    @Test func flashWriteFailureFailsTheSession() {
        let bench = Bench()
        let image = makeImage(700, seed: 19)
        _ = bench.begin(image, batch: 4)
        #expect(bench.data(chunk(image, at: 0, length: 12)).isEmpty)
        bench.flash.failing = true
        #expect(bench.data(chunk(image, at: 12, length: 12)) == [nak(3, image, 12)])
        #expect(bench.status()[1] == 0x04)
        #expect(bench.data(chunk(image, at: 24, length: 12)).isEmpty)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x03]]))
        #expect(bench.begin(image, batch: 4) == [0x90, 0x03, 0x04] + le32(0) + le16(0))
        // Once flash works again, BEGIN starts the session over, even for the same identity.
        bench.flash.failing = false
        #expect(bench.begin(image, batch: 4) == [0x90, 0x00, 0x01] + le32(0) + le16(4))
        bench.send(image, from: 0, payload: 50, batch: 4, begin: false)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    // MARK: - A lossy link end to end

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func lossyLinkWithRebootsDeliversAByteIdenticalImage(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let bench = Bench(sectors: 40, sectorSize: 256)
        let image = makeImage(6000 + Int(random.next() % 2000), seed: seed)
        var payload = 12
        var batch: UInt16 = 4
        guard let reply = bench.begin(image, batch: batch) else { return }
        var next = Int(le32(reply[3..<7]))
        var acked = next
        var sessions = 1
        var rounds = 0
        while acked < image.count, rounds < 10_000 {
            rounds += 1
            // A window of two batches, with faults.
            var notifications: [[UInt8]] = []
            var sent = 0
            while sent < 2 * Int(batch), next < image.count {
                let length = min(payload, image.count - next)
                var value = chunk(image, at: next, length: length)
                next += length
                sent += 1
                switch random.next() % 25 {
                case 0: continue  // lost
                case 1: value[value.count - 1] ^= 0x20  // corrupted
                case 2: notifications += bench.data(value)  // duplicated
                default: break
                }
                notifications += bench.data(value)
            }
            for notification in notifications {
                #expect(notification.first == 0xA0 || notification.first == 0xA1)
                let offset = Int(le32(notification[(notification.first == 0xA0 ? 1 : 2)...].prefix(4)))
                if notification.first == 0xA0 {
                    #expect(Array(notification[5..<9]) == le32(crc(Array(image[..<offset]))))
                    acked = max(acked, offset)
                } else {
                    #expect(notification[1] == 1 || notification[1] == 2)
                    next = offset
                }
            }
            if notifications.isEmpty && next >= image.count && acked < image.count {
                next = acked  // ACK timeout: rewind to the last ACK
            }
            if random.next() % 10 == 0 {
                // The link drops, maybe the device reboots; the app comes back with BEGIN and
                // possibly another MTU and batch.
                if random.next() % 2 == 0 { bench.reboot() } else { bench.device.disconnected() }
                payload = [12, 20, 100, 236][Int(random.next() % 4)]
                batch = UInt16(1 + random.next() % 20)
                guard let reply = bench.begin(image, batch: batch), reply[1] == 0x00 else {
                    Issue.record("BEGIN failed on resume")
                    return
                }
                #expect(reply[2] == 0x01 || reply[2] == 0x02)
                next = Int(le32(reply[3..<7]))
                #expect(next >= acked)
                acked = next
                sessions += 1
            }
        }
        #expect(acked == image.count)
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
        #expect(bench.flash.bytes(0..<image.count) == image)
        #expect(sessions > 1)
        #expect(bench.device.counters.naks > 0)
    }

    // MARK: - Version 2 (compact chunks)

    /// Version 2 at MTU 23: 18 payload bytes per 20-byte write, 14 in a batch's last chunk, ACKs
    /// only after the batch check matched.
    @Test func compactChunksAreAckedAfterEachBatchCheck() {
        let bench = Bench(sectors: 8)
        let image = makeImage(1000, seed: 21)
        #expect(bench.begin(image, batch: 4, protocolVersion: 2) == [0x90, 0x00, 0x01] + le32(0) + le16(4))
        var offset = 0
        var sequence = 0
        var acks = 0
        while offset < image.count {
            let (write, end, batchEnd) = compactChunk(image, at: offset, sequence: sequence, payload: 18, batch: 4)
            let notifications = bench.data(write)
            #expect(notifications == (batchEnd ? [ack(image, end)] : []), "chunk \(sequence)")
            acks += batchEnd ? 1 : 0
            offset = end
            sequence += 1
        }
        #expect(bench.flash.bytes(0..<1000) == image)
        #expect(bench.device.counters.acks == acks)
        #expect(bench.status() == [0x01, 0x02] + le32(1000) + le32(crc(image)) + le32(1000) + le32(crc(image)) + le32(7) + le16(16))
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
    }

    /// A corrupt payload has no CRC of its own in version 2: the batch check catches it, the
    /// device goes back to its last ACK (repairing the flash it programmed since), and the
    /// resent batch lands byte-identical on NOR flash.
    @Test func compactCorruptionIsCaughtByTheBatchCheckAndResent() {
        let bench = Bench(sectors: 8, sectorSize: 256)
        let image = makeImage(600, seed: 22)
        _ = bench.begin(image, batch: 4, protocolVersion: 2)
        var offset = 0
        for sequence in 0..<4 {
            let next = compactChunk(image, at: offset, sequence: sequence, payload: 18, batch: 4)
            #expect(bench.data(next.write) == (next.batchEnd ? [ack(image, next.end)] : []))
            offset = next.end
        }
        let acked = 68  // 3 × 18 + 14
        #expect(offset == acked)
        var chunks: [(write: [UInt8], end: Int, batchEnd: Bool)] = []
        var position = acked
        for sequence in 4..<12 {
            let next = compactChunk(image, at: position, sequence: sequence, payload: 18, batch: 4)
            chunks.append(next)
            position = next.end
        }
        var corrupt = chunks[1].write
        corrupt[5] ^= 0x40  // a payload byte; the tag and the sequence are intact
        #expect(bench.data(chunks[0].write).isEmpty)
        #expect(bench.data(corrupt).isEmpty)  // nothing to see yet
        #expect(bench.data(chunks[2].write).isEmpty)
        #expect(bench.data(chunks[3].write) == [nak(1, image, acked)])  // the check failed: back to 68
        #expect(bench.data(chunks[4].write).isEmpty)  // in flight behind it: a gap, NAK outstanding
        for chunk in chunks { _ = bench.data(chunk.write) }
        #expect(bench.status()[2..<6] == le32(chunks[7].end)[...])
        #expect(bench.flash.bytes(0..<chunks[7].end) == Array(image[0..<chunks[7].end]))
    }

    @Test func compactGapIsNAKedOnceAndDuplicatesAreSilent() {
        let bench = Bench()
        let image = makeImage(400, seed: 23)
        _ = bench.begin(image, batch: 4, protocolVersion: 2)
        let c0 = compactChunk(image, at: 0, sequence: 0, payload: 18, batch: 4)
        let c1 = compactChunk(image, at: c0.end, sequence: 1, payload: 18, batch: 4)
        let c2 = compactChunk(image, at: c1.end, sequence: 2, payload: 18, batch: 4)
        let c3 = compactChunk(image, at: c2.end, sequence: 3, payload: 18, batch: 4)
        #expect(bench.data(c0.write).isEmpty)
        #expect(bench.data(c2.write) == [nak(2, image, c0.end)])  // chunk 1 lost
        #expect(bench.data(c3.write).isEmpty)  // one NAK per gap
        #expect(bench.data(c0.write).isEmpty)  // a duplicate: silent
        #expect(bench.data(c1.write).isEmpty)
        #expect(bench.data(c2.write).isEmpty)
        #expect(bench.data(c3.write) == [ack(image, c3.end)])
        #expect(bench.device.counters.naks == 1)
        // The last chunk of the image must carry the batch check.
        let short = makeImage(10, seed: 24)
        _ = bench.begin(short, batch: 4, protocolVersion: 2)
        #expect(bench.data([0x00, 0x00] + short) == [nak(1, short, 0)])
    }

    /// Bytes past the last batch check are not trusted across a reconnection: BEGIN continues
    /// from the check, and numbering restarts at 0 there.
    @Test func compactBeginDropsTheUncheckedTail() {
        let bench = Bench(sectors: 8, sectorSize: 256)
        let image = makeImage(600, seed: 25)
        _ = bench.begin(image, batch: 4, protocolVersion: 2)
        var position = 0
        for sequence in 0..<6 {
            let next = compactChunk(image, at: position, sequence: sequence, payload: 18, batch: 4)
            _ = bench.data(next.write)
            position = next.end
        }
        bench.device.disconnected()
        #expect(bench.begin(image, batch: 4, protocolVersion: 2) == [0x90, 0x00, 0x01] + le32(68) + le16(4))
        position = 68
        var sequence = 0
        while position < image.count {
            let next = compactChunk(image, at: position, sequence: sequence, payload: 18, batch: 4)
            _ = bench.data(next.write)
            position = next.end
            sequence += 1
        }
        #expect(bench.control([0x11]) == (.success, [[0x91, 0x00]]))
        #expect(bench.flash.bytes(0..<600) == image)
    }
}

// MARK: - Bench

/// One device on a fake peripheral with in-memory flash; every call returns what was notified.
private final class Bench: Sendable {
    let flash: MemoryFlash
    let device = FramedReferenceDevice()
    private let current: Mutex<FakePeripheral>

    /// A slot of `sectors` sectors; the last is the journal.
    init(sectors: Int = 16, sectorSize: Int = 256) {
        flash = MemoryFlash(capacity: sectors * sectorSize, sectorSize: sectorSize)
        let peripheral = FakePeripheral(flash: flash)
        current = Mutex(peripheral)
        device.connected(peripheral)
    }

    var peripheral: FakePeripheral { current.withLock { $0 } }

    /// Restarts the device as the host does: link down, `rebooted()`, a new connection.
    func reboot() {
        device.disconnected()
        device.rebooted()
        let peripheral = FakePeripheral(flash: flash)
        current.withLock { $0 = peripheral }
        device.connected(peripheral)
    }

    func control(_ bytes: [UInt8]) -> (att: ATTStatus, replies: [[UInt8]]) {
        let peripheral = self.peripheral
        let att = device.write(Data(bytes), to: device.controlCharacteristic, kind: .withResponse, peripheral: peripheral)
        return (att, peripheral.takeNotifications())
    }

    func data(_ bytes: [UInt8]) -> [[UInt8]] {
        let peripheral = self.peripheral
        let att = device.write(Data(bytes), to: device.dataCharacteristic, kind: .withoutResponse, peripheral: peripheral)
        #expect(att == .success)
        return peripheral.takeNotifications()
    }

    func status() -> [UInt8] {
        switch device.read(device.statusCharacteristic, peripheral: peripheral) {
        case .success(let data):
            #expect(data.count == 24)
            return [UInt8](data)
        case .failure(let status):
            Issue.record("Status read failed: \(status)")
            return []
        }
    }

    /// BEGIN; returns its one reply (nil, recorded as an issue, if there was not exactly one).
    func begin(size: UInt32, crc: UInt32, version: UInt32, batch: UInt16) -> [UInt8]? {
        let (att, replies) = control(beginCommand(size: size, crc: crc, version: version, batch: batch))
        #expect(att == .success)
        #expect(replies.count == 1)
        return replies.first
    }

    /// BEGIN for `image` as version 7.
    func begin(_ image: [UInt8], batch: UInt16) -> [UInt8]? {
        begin(size: UInt32(image.count), crc: crc(image), version: 7, batch: batch)
    }

    /// BEGIN for `image` as version 7, in protocol version `protocolVersion`.
    func begin(_ image: [UInt8], batch: UInt16, protocolVersion: UInt8) -> [UInt8]? {
        var command = beginCommand(size: UInt32(image.count), crc: crc(image), version: 7, batch: batch)
        command[1] = protocolVersion
        let (att, replies) = control(command)
        #expect(att == .success)
        #expect(replies.count == 1)
        return replies.first
    }

    /// Streams `image[from..<through]` in order (after a BEGIN unless told not to), checking that
    /// the device acknowledges exactly as the spec says.
    func send(_ image: [UInt8], from start: Int, payload: Int, batch: UInt16, through end: Int? = nil, begin: Bool = true) {
        let end = end ?? image.count
        if begin {
            #expect(self.begin(image, batch: batch) == [0x90, 0x00, 0x01] + le32(UInt32(start)) + le16(batch))
        }
        var chunks = 0
        var offset = start
        while offset < end {
            let length = min(payload, end - offset)
            let notifications = data(chunk(image, at: offset, length: length))
            offset += length
            chunks += 1
            if chunks % Int(batch) == 0 || offset == image.count {
                #expect(notifications == [ack(image, offset)], "at \(offset)")
            } else {
                #expect(notifications.isEmpty, "at \(offset)")
            }
        }
    }
}

/// The host side of a connection: records notifications and reboot requests.
private final class FakePeripheral: PeripheralContext {
    let flash: any FlashStorage
    private let notified = Mutex<[[UInt8]]>([])
    private let rebootRequests = Mutex<[Duration]>([])

    init(flash: any FlashStorage) { self.flash = flash }

    func isSubscribed(to characteristic: CharacteristicID) -> Bool { true }

    func notify(_ value: Data, on characteristic: CharacteristicID) {
        #expect(characteristic.characteristic == FramedReferenceDevice.controlUUID)
        notified.withLock { $0.append([UInt8](value)) }
    }

    func reboot(after delay: Duration) {
        rebootRequests.withLock { $0.append(delay) }
    }

    /// Notifications since the last call.
    func takeNotifications() -> [[UInt8]] {
        notified.withLock { notifications in
            defer { notifications.removeAll() }
            return notifications
        }
    }

    /// Reboot requests so far.
    var reboots: [Duration] { rebootRequests.withLock { $0 } }
}

/// NOR flash in memory: erase to FF by sector, programming ANDs bits in. Logs erases.
private final class MemoryFlash: FlashStorage {
    private struct State {
        var bytes: [UInt8]
        var failing = false
        var erased: [Int] = []
    }

    let capacity: Int
    let sectorSize: Int
    private let state: Mutex<State>

    init(capacity: Int, sectorSize: Int) {
        self.capacity = capacity
        self.sectorSize = sectorSize
        state = Mutex(State(bytes: [UInt8](repeating: 0xFF, count: capacity)))
    }

    /// When set, erases and writes fail.
    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    /// Start offsets of the sectors erased since the last `clearLog()`.
    var erasedSectors: [Int] { state.withLock { $0.erased } }

    func clearLog() { state.withLock { $0.erased.removeAll() } }

    func erase(_ range: Range<Int>) throws(FlashError) {
        guard range.lowerBound >= 0, range.upperBound <= capacity else { throw FlashError("erase out of range") }
        let sectorSize = self.sectorSize
        try state.withLock { (state: inout State) throws(FlashError) in
            if state.failing { throw FlashError("injected erase failure") }
            var sector = range.lowerBound / sectorSize * sectorSize
            while sector < range.upperBound {
                for index in sector..<(sector + sectorSize) { state.bytes[index] = 0xFF }
                state.erased.append(sector)
                sector += sectorSize
            }
        }
    }

    func write(_ bytes: Data, at offset: Int) throws(FlashError) {
        guard offset >= 0, offset + bytes.count <= capacity else { throw FlashError("write out of range") }
        try state.withLock { (state: inout State) throws(FlashError) in
            if state.failing { throw FlashError("injected write failure") }
            for (index, byte) in zip(offset..., bytes) { state.bytes[index] &= byte }
        }
    }

    func read(_ range: Range<Int>) -> Data {
        state.withLock { Data($0.bytes[range]) }
    }

    func bytes(_ range: Range<Int>) -> [UInt8] {
        state.withLock { Array($0.bytes[range]) }
    }

    /// Overwrites bytes behind the device's back (stale or corrupted flash).
    func poke(_ bytes: [UInt8], at offset: Int) {
        state.withLock { state in
            for (index, byte) in zip(offset..., bytes) { state.bytes[index] = byte }
        }
    }
}

// MARK: - Helpers

private func crc(_ bytes: [UInt8]) -> UInt32 {
    framed_ota_crc32(0, bytes, bytes.count)
}

private func le32(_ value: UInt32) -> [UInt8] {
    [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
}

private func le32(_ value: Int) -> [UInt8] { le32(UInt32(value)) }

private func le32(_ bytes: some Collection<UInt8>) -> UInt32 {
    bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
}

private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

private func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }

/// Bytes from a hex string with spaces.
private func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

private func beginCommand(size: UInt32, crc: UInt32, version: UInt32, batch: UInt16) -> [UInt8] {
    [0x10, 0x01] + le32(size) + le32(crc) + le32(version) + le16(batch)
}

/// A data chunk carrying `image[offset..<offset + length]`.
private func chunk(_ image: [UInt8], at offset: Int, length: Int) -> [UInt8] {
    let payload = Array(image[offset..<(offset + length)])
    return le32(offset) + le32(crc(payload)) + payload
}

/// Version-2 chunk `sequence` starting at `offset`, split as the spec's client does: `payload`
/// bytes, or 4 fewer with the batch check in every `batch`-th chunk and the one reaching the end.
private func compactChunk(_ image: [UInt8], at offset: Int, sequence: Int, payload: Int, batch: Int) -> (write: [UInt8], end: Int, batchEnd: Bool) {
    let remaining = image.count - offset
    let batchEnd = (sequence + 1) % batch == 0 || remaining <= payload
    let end = offset + (batchEnd ? min(payload - 4, remaining) : payload)
    let tag = UInt16(sequence & 0x7FFF) | (batchEnd ? 0x8000 : 0)
    return (le16(tag) + Array(image[offset..<end]) + (batchEnd ? le32(crc(Array(image[..<end]))) : []), end, batchEnd)
}

private func ack(_ image: [UInt8], _ offset: Int) -> [UInt8] {
    [0xA0] + le32(offset) + le32(crc(Array(image[..<offset])))
}

private func nak(_ reason: UInt8, _ image: [UInt8], _ offset: Int) -> [UInt8] {
    [0xA1, reason] + le32(offset) + le32(crc(Array(image[..<offset])))
}

private func makeImage(_ count: Int, seed: UInt64) -> [UInt8] {
    var random = SeededRandom(seed: seed)
    return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next() >> 29) }
}
