import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATransportSimulator
import Synchronization
import Testing

/// The simulated Nordic bootloader driven directly, byte for byte, through a fake peripheral.
@Suite struct NordicBootloaderModelTests {
    // MARK: - GATT

    @Test func exposesTheSecureDFUServiceWithControlPointAndPacket() {
        let model = NordicBootloaderModel()
        #expect(model.services.count == 1)
        let table = model.services[0].characteristicTable
        #expect(model.services[0].uuid == DFUGATTProfile.service)
        #expect(table[DFUGATTProfile.controlPoint] == [.write, .notify])
        #expect(table[DFUGATTProfile.packet] == [.writeWithoutResponse])
    }

    @Test func controlPointWriteWithoutSubscriptionFailsWithCCCDImproperlyConfigured() {
        let bench = Bench()
        bench.peripheral.isSubscribedToControlPoint = false
        let status = bench.model.write(Data([0x06, 0x01]), to: DFUGATTProfile.controlPoint, kind: .withResponse, peripheral: bench.peripheral)
        #expect(status == .cccdImproperlyConfigured)
        #expect(status.rawValue == 0xFD)
        #expect(bench.peripheral.takeNotifications().isEmpty)
        // Nothing changed: once subscribed, the same request is answered.
        bench.peripheral.isSubscribedToControlPoint = true
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
    }

    @Test func writesOfTheWrongKindOrLengthAreRefusedAtATTLevel() {
        let bench = Bench()
        let cp = DFUGATTProfile.controlPoint
        #expect(bench.model.write(Data([0x03]), to: cp, kind: .withoutResponse, peripheral: bench.peripheral) == .writeNotPermitted)
        #expect(bench.model.write(Data(), to: cp, kind: .withResponse, peripheral: bench.peripheral) == .invalidAttributeValueLength)
        #expect(bench.model.write(Data(repeating: 3, count: 24), to: cp, kind: .withResponse, peripheral: bench.peripheral) == .invalidAttributeValueLength)
        #expect(bench.model.write(Data([1]), to: DFUGATTProfile.packet, kind: .withResponse, peripheral: bench.peripheral) == .writeNotPermitted)
        #expect(
            bench.model.write(Data(repeating: 1, count: 245), to: DFUGATTProfile.packet, kind: .withoutResponse, peripheral: bench.peripheral)
                == .invalidAttributeValueLength)
        #expect(bench.peripheral.takeNotifications().isEmpty)
    }

    // MARK: - Happy path

    @Test func happyPathWithTheNrfutilFixtureWritesTheImageAndAnswersByteForByte() throws {
        let dat = try [UInt8](Fixture.data("app", "dat"))
        let bin = try [UInt8](Fixture.data("app", "bin"))
        let bench = Bench()

        // Init packet, as Nordic's clients send it (§6).
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
        #expect(bench.request([0x01, 0x01] + u32LE(UInt32(dat.count))) == [[0x60, 0x01, 0x01]])
        #expect(bench.request([0x02, 0x00, 0x00]) == [[0x60, 0x02, 0x01]])
        #expect(bench.send(dat).isEmpty)
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(69) + u32LE(CRC32.checksum(dat))])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])

        // Firmware: one 3072-byte object (the last, so not a page multiple), PRN 12.
        #expect(bench.request([0x02, 0x0C, 0x00]) == [[0x60, 0x02, 0x01]])
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.request([0x01, 0x02, 0x00, 0x0C, 0x00, 0x00]) == [[0x60, 0x01, 0x01]])
        let receipts = bench.send(bin)
        #expect(receipts == [[0x60, 0x03, 0x01] + u32LE(2928) + u32LE(CRC32.checksum(bin[0..<2928]))])
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(3072) + u32LE(CRC32.checksum(bin))])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])

        // Verified, installed, and the device resets into it.
        #expect(bench.peripheral.reboots == [.milliseconds(300)])
        #expect(bench.flashBytes(0..<3072) == bin)
        let installed = try #require(bench.model.installedImage)
        #expect(installed.size == 3072)
        #expect(hex(installed.sha256) == Fixture.appSHA256)
        #expect(installed.version == 3)
        #expect(installed.firmwareType == .application)
        #expect(installed.crc32 == CRC32.checksum(bin))
        #expect(bench.model.counters.updatesInstalled == 1)
        #expect(bench.model.counters.receiptNotifications == 1)
        #expect(bench.model.counters.packetsDropped == 0)

        // Until the reset it ignores requests; after it, the init packet is gone and the
        // installed version (3) is the floor for the next update.
        #expect(bench.request([0x06, 0x01]).isEmpty)
        bench.reboot()
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
        #expect(bench.model.storedSettings?.applicationVersion == 3)
        let older = Image(size: 100, seed: 1)
        let downgrade = TestProtobuf.unsignedPacket(older.initCommand(fwVersion: 2))
        #expect(bench.executeInit(downgrade) == [0x60, 0x04, 0x0B, 0x05])
    }

    @Test func multiObjectImageEndsByteIdenticalInFlash() throws {
        let image = Image(size: 10_000, seed: 7)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x02, 0x00, 0x00]) == [[0x60, 0x02, 0x01]])
        for (index, object) in image.objects(4096).enumerated() {
            #expect(bench.request([0x01, 0x02] + u32LE(UInt32(object.count))) == [[0x60, 0x01, 0x01]], "create \(index)")
            bench.send(object)
            let end = index * 4096 + object.count
            #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(UInt32(end)) + u32LE(CRC32.checksum(image.bytes[0..<end]))])
            #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]], "execute \(index)")
        }
        #expect(bench.flashBytes(0..<10_000) == image.bytes)
        #expect(bench.model.installedImage?.sha256 == SHA256.hash(image.bytes))
        #expect(bench.peripheral.reboots.count == 1)
    }

    // MARK: - Select, Create and Execute rules

    @Test func selectReportsOffsetsAndCRCsAfterAPartialTransfer() {
        let image = Image(size: 10_000, seed: 3)
        let dat = image.initPacket()
        let bench = Bench()
        // Half of the init packet: Select(command) reports what arrived.
        #expect(bench.request([0x01, 0x01] + u32LE(UInt32(dat.count))) == [[0x60, 0x01, 0x01]])
        bench.send(Array(dat[0..<20]))
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(20) + u32LE(CRC32.checksum(dat[0..<20]))])
        bench.send(Array(dat[20...]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])

        // One object executed, 1000 bytes of the next.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[4096..<5096]))
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(5096) + u32LE(CRC32.checksum(image.bytes[0..<5096]))])
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(UInt32(dat.count)) + u32LE(CRC32.checksum(dat))])
        let progress = bench.model.progress
        #expect(progress.executedOffset == 4096)
        #expect(progress.executedCRC == CRC32.checksum(image.bytes[0..<4096]))
        #expect(progress.dataObjectSize == 4096)

        // Create rewinds to the last executed object; the object is sent again in full.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(4096) + u32LE(CRC32.checksum(image.bytes[0..<4096]))])
        bench.send(Array(image.bytes[4096..<8192]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.flashBytes(0..<8192) == Array(image.bytes[0..<8192]))
    }

    @Test func createDataBeforeAnExecutedInitPacketIsNotPermitted() {
        let bench = Bench()
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x08]])
        // An init packet received but not executed does not count either.
        let image = Image(size: 5000, seed: 2)
        let dat = image.initPacket()
        #expect(bench.request([0x01, 0x01] + u32LE(UInt32(dat.count))) == [[0x60, 0x01, 0x01]])
        bench.send(dat)
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x08]])
        // Packets for a data object without init packet are refused (silently without PRN).
        #expect(bench.send([1, 2, 3]).isEmpty)
        #expect(bench.model.counters.packetsRefused == 1)
    }

    @Test func objectSizeRulesFollowTheSDKOrder() {
        let image = Image(size: 10_000, seed: 4)
        let bench = Bench()
        // Command objects: 0 → invalid parameter, > 512 → insufficient resources.
        #expect(bench.request([0x01, 0x01] + u32LE(0)) == [[0x60, 0x01, 0x03]])
        #expect(bench.request([0x01, 0x01] + u32LE(513)) == [[0x60, 0x01, 0x04]])
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        // Data objects.
        #expect(bench.request([0x01, 0x02] + u32LE(0)) == [[0x60, 0x01, 0x03]])
        #expect(bench.request([0x01, 0x02] + u32LE(8192)) == [[0x60, 0x01, 0x04]], "page multiple, larger than 4096")
        #expect(bench.request([0x01, 0x02] + u32LE(5000)) == [[0x60, 0x01, 0x03]], "not a page multiple and not the last")
        #expect(bench.request([0x01, 0x02] + u32LE(12288)) == [[0x60, 0x01, 0x04]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[4096..<8192]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        // 1808 bytes remain: a 4096-byte object would pass the end of the image.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x08]])
        #expect(bench.request([0x01, 0x02] + u32LE(1000)) == [[0x60, 0x01, 0x03]], "short, but not the last")
        #expect(bench.request([0x01, 0x02] + u32LE(1808)) == [[0x60, 0x01, 0x01]])
    }

    @Test func executeOfAnIncompleteOrAlreadyExecutedObjectIsNotPermitted() {
        let image = Image(size: 10_000, seed: 5)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x06, 0x02]).count == 1)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x08]], "no data object created yet")
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4000]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x08]], "object incomplete")
        bench.send(Array(image.bytes[4000..<4096]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x08]], "re-execute, as SDK 15.x–17 answer")
        // The init packet may be executed twice: harmless.
        #expect(bench.request([0x06, 0x01]).count == 1)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
    }

    @Test func aWriteLongerThanTheObjectIsDiscardedWithInvalidParameter() {
        let image = Image(size: 10_000, seed: 6)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x02, 0x01, 0x00]) == [[0x60, 0x02, 0x01]])  // PRN 1 makes results visible.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        #expect(bench.send(Array(image.bytes[0..<4000]), packetSize: 200).count == 20)
        // 200 more bytes would end at 4200 > 4096: refused as a whole, reported on the PRN.
        #expect(bench.send(Array(image.bytes[4000..<4200]), packetSize: 200) == [[0x60, 0x03, 0x03]])
        #expect(bench.model.progress.offset == 4000)
        #expect(bench.send(Array(image.bytes[4000..<4096])) == [[0x60, 0x03, 0x01] + u32LE(4096) + u32LE(CRC32.checksum(image.bytes[0..<4096]))])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        // An init packet longer than declared: the same.
        #expect(bench.request([0x01, 0x01] + u32LE(4)) == [[0x60, 0x01, 0x01]])
        #expect(bench.send([1, 2, 3, 4, 5]) == [[0x60, 0x03, 0x03]])
        #expect(bench.send([1, 2, 3, 4]) == [[0x60, 0x03, 0x01] + u32LE(4) + u32LE(CRC32.checksum([1, 2, 3, 4] as [UInt8]))])
    }

    // MARK: - Init packet validation

    @Test func wrongHardwareVersionIsRefusedAndResetsTheInitPacket() {
        let image = Image(size: 3000, seed: 8)
        let dat = TestProtobuf.unsignedPacket(image.initCommand(hwVersion: 51))
        let bench = Bench()
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x0B, 0x06])
        // dfu_progress_reset(): the packet is gone, data stays refused.
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
        #expect(bench.request([0x01, 0x02] + u32LE(3000)) == [[0x60, 0x01, 0x08]])
        #expect(bench.model.storedSettings == nil)
    }

    @Test(arguments: ValidationCase.all)
    func initPacketChecksRunInTheSDKOrder(_ check: ValidationCase) {
        let bench = Bench(configuration: check.configuration)
        #expect(bench.executeInit(check.packet) == check.expected, "\(check.name)")
    }

    @Test func malformedInitPacketIsAnInvalidObjectAndKeepsTheBytes() {
        let bench = Bench()
        let garbage: [UInt8] = [0x0A, 0x40, 0x08]  // Packet.command claims 64 bytes, has 1.
        #expect(bench.executeInit(garbage) == [0x60, 0x04, 0x05])
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(3) + u32LE(CRC32.checksum(garbage))])
        // Execute with nothing received: an empty packet does not decode either.
        let fresh = Bench()
        #expect(fresh.request([0x04]) == [[0x60, 0x04, 0x05]])
        // Execute before the declared size arrived.
        #expect(fresh.request([0x01, 0x01] + u32LE(10)) == [[0x60, 0x01, 0x01]])
        fresh.send([0x0A, 0x02])
        #expect(fresh.request([0x04]) == [[0x60, 0x04, 0x08]])
    }

    @Test func signedFixturesAreAcceptedWithoutVerifyingTheSignature() throws {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.requiresSignature = true
        configuration.installedSoftDevice = 0x0101
        // app-signed.zip: sd_req 0xB7, 0x101; version 0x010203.
        let signed = try #require(Fixture.files(of: "app-signed")["app.dat"])
        #expect(Bench(configuration: configuration).executeInit([UInt8](signed)) == [0x60, 0x04, 0x01])
        // bootloader.zip: signed bootloader, version 7, sd_req 0x0101; then install it.
        let files = try Fixture.files(of: "bootloader")
        let bin = try [UInt8](#require(files["bootloader.bin"] ?? files.first { $0.key.hasSuffix(".bin") }?.value))
        let dat = try [UInt8](#require(files["bootloader.dat"] ?? files.first { $0.key.hasSuffix(".dat") }?.value))
        let bench = Bench(configuration: configuration)
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(UInt32(bin.count))) == [[0x60, 0x01, 0x01]])
        bench.send(bin)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(hex(try #require(bench.model.installedImage).sha256) == Fixture.blSHA256)
        #expect(bench.model.storedSettings?.bootloaderVersion == 7)
        // The same bootloader again is not newer: refused.
        bench.reboot()
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x0B, 0x05])
    }

    // MARK: - Final verification

    @Test func wrongHashIsReportedOnTheFinalExecuteAndTheDeviceResets() {
        let image = Image(size: 5000, seed: 9)
        let other = Image(size: 5000, seed: 10)
        let dat = TestProtobuf.unsignedPacket(image.initCommand(hash: other.hash))
        let bench = Bench()
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x01])
        for object in image.objects(4096) {
            #expect(bench.request([0x01, 0x02] + u32LE(UInt32(object.count))) == [[0x60, 0x01, 0x01]])
            bench.send(object)
            if object.count == 4096 { #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]]) }
        }
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(5000) + u32LE(CRC32.checksum(image.bytes))])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x0B, 0x0C]])
        #expect(bench.peripheral.reboots == [.milliseconds(300)])
        #expect(bench.model.installedImage == nil)
        #expect(bench.model.counters.verificationFailures == 1)
        // The SDK dropped the init packet before resetting: the update starts over.
        bench.reboot()
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x08]])
    }

    // MARK: - PRN

    @Test func receiptNotificationsComeEveryNPacketsWithCumulativeOffsetAndCRC() {
        let image = Image(size: 10_000, seed: 11)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x02, 0x03, 0x00]) == [[0x60, 0x02, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        let receipts = bench.send(Array(image.bytes[0..<4096]), packetSize: 100)  // 41 packets
        let expected = stride(from: 300, through: 3900, by: 300).map { end in
            [0x60, 0x03, 0x01] + u32LE(UInt32(end)) + u32LE(CRC32.checksum(image.bytes[0..<end]))
        }
        #expect(receipts == expected)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])

        // The count restarts on Create: 2 packets, Create again, then 3 more for the next PRN.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        #expect(bench.send(Array(image.bytes[4096..<4296]), packetSize: 100).isEmpty)
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        #expect(bench.send(Array(image.bytes[4096..<4296]), packetSize: 100).isEmpty)
        #expect(
            bench.send(Array(image.bytes[4296..<4396]), packetSize: 100) == [[0x60, 0x03, 0x01] + u32LE(4396) + u32LE(CRC32.checksum(image.bytes[0..<4396]))])
        // Offsets after a rewind are cumulative over the whole image, not per object.
        #expect(bench.model.counters.receiptNotifications == 14)

        // PRN 0 turns them off.
        #expect(bench.request([0x02, 0x00, 0x00]) == [[0x60, 0x02, 0x01]])
        #expect(bench.send(Array(image.bytes[4396..<8192]), packetSize: 100).isEmpty)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
    }

    // MARK: - Op codes

    @Test func reducedProtocolOpCodesAreNotSupported() {
        let bench = Bench()
        for request: [UInt8] in [[0x00], [0x07], [0x08], [0x09, 0x01], [0x0A], [0x0B, 0x00], [0x05], [0x42], [0x60], [0xFF]] {
            #expect(bench.request(request) == [[0x60, request[0], 0x02]], "op \(request[0])")
        }
    }

    @Test func malformedRequestsAreInvalidParametersAndBadObjectTypesInvalidObjects() {
        let bench = Bench()
        #expect(bench.request([0x01, 0x02, 0x00]) == [[0x60, 0x01, 0x03]])
        #expect(bench.request([0x02, 0x0C]) == [[0x60, 0x02, 0x03]])
        #expect(bench.request([0x06]) == [[0x60, 0x06, 0x03]])
        // Trailing bytes are ignored, as the SDK ignores them.
        #expect(bench.request([0x06, 0x01, 0xAA]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(0) + u32LE(0)])
        // An invalid object type is remembered: Execute and Checksum fail until a valid Select.
        #expect(bench.request([0x06, 0x03]) == [[0x60, 0x06, 0x05]])
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x05]])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x05]])
        #expect(bench.request([0x01, 0x00] + u32LE(16)) == [[0x60, 0x01, 0x05]])
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(0) + u32LE(0)])
    }

    @Test func arbitraryInputNeverCrashesAndEveryAnswerIsAResponse() {
        var generator = SeededRandom(seed: 0xDF0)
        let image = Image(size: 9000, seed: 12)
        let bench = Bench()
        for round in 0..<4000 {
            if round == 500 { _ = bench.executeInit(image.initPacket()) }
            let length = Int(generator.next() % 26)
            var value = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if let first = value.first, generator.next() % 2 == 0 { value[0] = first % 0x0D }
            if generator.next() % 3 == 0 {
                _ = bench.model.write(Data(value), to: DFUGATTProfile.packet, kind: .withoutResponse, peripheral: bench.peripheral)
            } else {
                let status = bench.model.write(Data(value), to: DFUGATTProfile.controlPoint, kind: .withResponse, peripheral: bench.peripheral)
                #expect(status == .success || status == .invalidAttributeValueLength)
            }
            for notification in bench.peripheral.takeNotifications() {
                #expect(notification.count >= 3 && notification[0] == 0x60)
            }
            if !bench.peripheral.reboots.isEmpty { bench.reboot() }
        }
    }

    @Test func hostileConfigurationsAndTinyFlashesDoNotCrash() {
        var hostile = NordicBootloaderModel.Configuration()
        hostile.pageSize = 0
        hostile.maximumDataObjectSize = -5
        hostile.maximumCommandObjectSize = .max
        hostile.receiveBufferCount = -1
        hostile.flashWriteBytesPerSecond = 0
        hostile.packetSpacingWithoutClock = .seconds(-1)
        hostile.maximumPacketLength = 0
        hostile.resetDelay = .seconds(-1)
        hostile.inactivityTimeout = .seconds(-1)
        hostile.maximumBootloaderSize = -1
        let timing = FlashTiming(sectorSize: 256, sectorEraseTime: .milliseconds(1), writeBytesPerSecond: 1_000_000)
        let image = Image(size: 3000, seed: 21)
        let benches = [
            Bench(configuration: hostile),
            Bench(flash: SimulatedFlash(capacity: 4096, timing: FlashTiming(sectorSize: 4096, sectorEraseTime: .zero, writeBytesPerSecond: 1e6))),
            Bench(flash: SimulatedFlash(capacity: 8192, timing: timing)),
            Bench(configuration: hostile, clock: ManualClock(), flash: SimulatedFlash(capacity: 256, timing: timing)),
        ]
        for bench in benches {
            var generator = SeededRandom(seed: 5)
            let dat = image.initPacket()
            for request: [UInt8] in [[0x01, 0x01] + u32LE(UInt32(dat.count)), [0x02, 0x00, 0x00]] { _ = bench.request(request) }
            bench.send(dat, expectAccepted: false)
            _ = bench.request([0x04])
            for request: [UInt8] in [
                [0x06, 0x01], [0x06, 0x02], [0x01, 0x02] + u32LE(3000), [0x01, 0x02] + u32LE(.max), [0x03], [0x04], [0x02, 0xFF, 0xFF],
            ] {
                _ = bench.request(request)
                bench.send(Array(image.bytes[0..<1000]), packetSize: Int(generator.next() % 300) + 1, expectAccepted: false)
            }
            _ = bench.request([0x0C])
            bench.reboot()
            #expect(bench.request([0x06, 0x01]).count == 1)
        }
        // A 4 KiB flash holds only the settings page: no room for any image.
        #expect(benches[1].executeInit(image.initPacket()) == [0x60, 0x04, 0x04])
        // 256-byte sectors: the settings take three of the 32, the image fits in the rest.
        let small = benches[2]
        small.reboot()
        #expect(small.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(small.request([0x01, 0x02] + u32LE(3000)) == [[0x60, 0x01, 0x01]])
        small.send(image.bytes)
        #expect(small.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(small.flashBytes(0..<3000) == image.bytes)
    }

    // MARK: - Resets and persistence

    @Test func rebootKeepsTheExecutedInitPacketButNotDataProgress() {
        let image = Image(size: 10_000, seed: 13)
        let dat = image.initPacket()
        let bench = Bench()
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[4096..<5000]))

        // A disconnect keeps everything (RAM).
        bench.model.disconnected()
        bench.model.connected(bench.peripheral)
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(5000) + u32LE(CRC32.checksum(image.bytes[0..<5000]))])

        // A reset keeps only the init packet (SDK 15.3: NRF_DFU_SAVE_PROGRESS_IN_FLASH = 0).
        bench.reboot()
        #expect(bench.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(UInt32(dat.count)) + u32LE(CRC32.checksum(dat))])
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.model.progress.initPacketAccepted)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x08]], "nothing to execute")
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])

        // The settings live in flash: a new model on the same flash picks them up.
        let other = Bench(flash: bench.flash)
        #expect(other.request([0x06, 0x01]) == [[0x60, 0x06, 0x01] + u32LE(512) + u32LE(UInt32(dat.count)) + u32LE(CRC32.checksum(dat))])
        #expect(other.model.storedSettings?.initPacket == Data(dat))
        for (index, object) in image.objects(4096).enumerated() {
            #expect(other.request([0x01, 0x02] + u32LE(UInt32(object.count))) == [[0x60, 0x01, 0x01]])
            other.send(object)
            #expect(other.request([0x04]) == [[0x60, 0x04, 0x01]], "object \(index)")
        }
        #expect(other.model.installedImage?.size == 10_000)
    }

    @Test func abortResetsWithoutAnswering() {
        let image = Image(size: 10_000, seed: 14)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<1000]))
        #expect(bench.request([0x0C]).isEmpty)
        #expect(bench.peripheral.reboots == [.milliseconds(300)])
        #expect(bench.model.progress.isResetting)
        #expect(bench.request([0x06, 0x02]).isEmpty, "ignored while resetting")
        bench.reboot()
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.model.progress.initPacketAccepted)
    }

    @Test func inactivityTimeoutResetsTheBootloaderLazily() {
        let clock = ManualClock()
        let image = Image(size: 10_000, seed: 15)
        let dat = image.initPacket()
        let bench = Bench(clock: clock)
        clock.advance(.seconds(1))
        #expect(bench.executeInit(dat) == [0x60, 0x04, 0x01])  // Create(command) restarts the timer at 1 s.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<2000]))
        clock.advance(.seconds(119))
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(2000) + u32LE(CRC32.checksum(image.bytes[0..<2000]))])
        // Selects and packets are not "DFU activity": at 121 s the device has reset under the
        // link. It answers nothing and asks the host to drop the link now.
        clock.advance(.seconds(1))
        #expect(bench.request([0x06, 0x02]).isEmpty)
        #expect(bench.peripheral.reboots == [.zero])
        #expect(bench.model.counters.inactivityResets == 1)
        bench.reboot()
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.model.progress.initPacketAccepted, "the executed init packet is in flash")

        // A data Execute restarts the timer; a reset while nobody is connected is silent.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))
        clock.advance(.seconds(100))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        clock.advance(.seconds(100))
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(4096) + u32LE(CRC32.checksum(image.bytes[0..<4096]))])
        bench.model.disconnected()
        clock.advance(.seconds(300))
        bench.model.connected(bench.peripheral)
        #expect(bench.request([0x06, 0x02]) == [[0x60, 0x06, 0x01] + u32LE(4096) + u32LE(0) + u32LE(0)])
        #expect(bench.peripheral.reboots.isEmpty, "nothing to drop: the link came up after the reset")
        #expect(bench.model.counters.inactivityResets == 2)
    }

    // MARK: - Receive buffers

    @Test func packetsArrivingWhileEveryBufferWaitsForFlashAreDroppedWithoutAClock() {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.receiveBufferCount = 4
        configuration.flashPageEraseTime = .milliseconds(100)
        configuration.packetSpacingWithoutClock = .milliseconds(1)
        let image = Image(size: 10_000, seed: 16)
        let bench = Bench(configuration: configuration)
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        // 17 packets 1 ms apart while a 100 ms erase runs: 4 buffers fill, 13 packets are lost.
        bench.send(Array(image.bytes[0..<4096]))
        #expect(bench.model.counters.packetsDropped == 13)
        #expect(bench.request([0x03]) == [[0x60, 0x03, 0x01] + u32LE(976) + u32LE(CRC32.checksum(image.bytes[0..<976]))])
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x08]])
        // The central waited for those answers: the flash caught up. Packets 1 ms apart now
        // outpace nothing but the new erase; with PRN 3 the central waits every 3 packets.
        #expect(bench.request([0x02, 0x03, 0x00]) == [[0x60, 0x02, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        let receipts = bench.send(Array(image.bytes[0..<4096]))
        #expect(receipts.count == 5)
        #expect(bench.model.counters.packetsDropped == 13)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
    }

    @Test func theDefaultPoolHoldsAWholePageOfFullPackets() {
        var configuration = NordicBootloaderModel.Configuration()
        configuration.flashPageEraseTime = .milliseconds(85)  // nRF52 worst case
        configuration.packetSpacingWithoutClock = .zero  // all at once
        let image = Image(size: 10_000, seed: 17)
        let bench = Bench(configuration: configuration)
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))  // 17 packets, 17 buffers
        #expect(bench.model.counters.packetsDropped == 0)
        #expect(bench.model.progress.receiveBuffersInUse == 17)
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        // With 20-byte packets the same page needs 205 buffers: most are lost.
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[4096..<8192]), packetSize: 20)
        #expect(bench.model.counters.packetsDropped == 205 - 17)
    }

    @Test func withAClockBuffersFreeAsTheFlashCatchesUp() {
        let clock = ManualClock()
        var configuration = NordicBootloaderModel.Configuration()
        configuration.receiveBufferCount = 3
        let image = Image(size: 10_000, seed: 18)
        let bench = Bench(configuration: configuration, clock: clock)
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        // Five packets in the same instant: three buffers, two drops.
        bench.send(Array(image.bytes[0..<1220]))
        #expect(bench.model.counters.packetsDropped == 2)
        #expect(bench.model.progress.offset == 732)
        // 10 ms erase + 3 × 0.98 ms of writes later, every buffer is free again.
        clock.advance(.milliseconds(13))
        bench.send(Array(image.bytes[732..<1464]))
        #expect(bench.model.counters.packetsDropped == 2)
        #expect(bench.model.progress.offset == 1464)
        #expect(bench.model.progress.receiveBuffersInUse == 3)
    }
}

// MARK: - In the simulator

extension NordicBootloaderModelTests {
    @Test func runsOnASimulatedDeviceAndResetsAfterTheUpdate() async throws {
        let dat = try Fixture.data("app", "dat")
        let bin = try Fixture.data("app", "bin")
        let simulation = Simulation(seed: 3)
        let model = NordicBootloaderModel(clock: { simulation.now })
        let device = SimulatedDevice(profile: .nrf52840, model: model, simulation: simulation)
        let controlPoint = DFUGATTProfile.controlPoint
        let log: [String] = try await simulation.run {
            let connection = try await SimulatedConnector(device: device).connectSimulated()
            var log: [String] = []
            do throws(TransportError) {
                try await connection.write(Data([0x06, 0x01]), to: controlPoint, kind: .withResponse)
                log.append("accepted without subscription")
            } catch {
                log.append("\(error.kind)")
            }
            var responses = try await connection.notifications(from: controlPoint).makeAsyncIterator()
            func request(_ bytes: [UInt8]) async throws -> String {
                try await connection.write(Data(bytes), to: controlPoint, kind: .withResponse)
                return hex(await responses.next() ?? Data())
            }
            func send(_ data: Data) async throws {
                for start in stride(from: 0, to: data.count, by: 244) {
                    let chunk = data[(data.startIndex + start)..<(data.startIndex + min(data.count, start + 244))]
                    try await connection.write(chunk, to: DFUGATTProfile.packet, kind: .withoutResponse)
                }
            }
            log.append(try await request([0x06, 0x01]))
            log.append(try await request([0x01, 0x01] + u32LE(UInt32(dat.count))))
            log.append(try await request([0x02, 0x00, 0x00]))
            try await send(dat)
            log.append(try await request([0x04]))
            log.append(try await request([0x01, 0x02] + u32LE(UInt32(bin.count))))
            try await send(bin)
            log.append(try await request([0x03]))
            log.append(try await request([0x04]))
            for await reason in connection.disconnections {
                log.append(reason.description)
                break
            }
            return log
        }
        #expect(log.count == 9)
        #expect(log.first == "\(TransportError.Kind.attError(0xFD))")
        #expect(
            Array(log.dropFirst().prefix(7)) == [
                "600601" + hex(u32LE(512) + u32LE(0) + u32LE(0)),
                "600101", "600201", "600401", "600101",
                "600301" + hex(u32LE(3072) + u32LE(CRC32.checksum(bin))),
                "600401",
            ])
        #expect(log.last?.contains("rebooted") == true)
        #expect(device.rebootCount == 1)
        #expect(device.flash.read(0..<3072) == bin)
        #expect(model.installedImage?.size == 3072)
    }
}

// MARK: - Test kit

extension NordicBootloaderModelTests {
    /// A peripheral that records what the model does.
    final class FakePeripheral: PeripheralContext {
        private struct State {
            var subscribed = true
            var notifications: [Data] = []
            var reboots: [Duration] = []
        }

        let flash: any FlashStorage
        private let state = Mutex(State())

        init(flash: any FlashStorage) { self.flash = flash }

        var isSubscribedToControlPoint: Bool {
            get { state.withLock { $0.subscribed } }
            set { state.withLock { $0.subscribed = newValue } }
        }

        var reboots: [Duration] { state.withLock { $0.reboots } }

        func takeNotifications() -> [Data] {
            state.withLock { state in
                defer { state.notifications = [] }
                return state.notifications
            }
        }

        func clearReboots() { state.withLock { $0.reboots = [] } }

        func isSubscribed(to characteristic: CharacteristicID) -> Bool {
            characteristic == DFUGATTProfile.controlPoint && isSubscribedToControlPoint
        }

        func notify(_ value: Data, on characteristic: CharacteristicID) {
            state.withLock { state in
                guard state.subscribed, characteristic == DFUGATTProfile.controlPoint else { return }
                state.notifications.append(value)
            }
        }

        func reboot(after delay: Duration) {
            state.withLock { $0.reboots.append(delay) }
        }
    }

    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        private let time = Mutex<Duration>(.zero)
        var now: Duration { time.withLock { $0 } }
        func advance(_ duration: Duration) { time.withLock { $0 += duration } }
    }

    /// A model, a connected fake peripheral with a 64 KiB simulated flash, and request helpers.
    // MARK: - RAM that outlives the central (decision 0048)

    @Test("the progress kept is restored by a new model and written back byte for byte")
    func runningStateRoundTrip() throws {
        let bench = Bench()
        bench.request([0x02, 0x0C, 0x00])  // PRN 12
        #expect(bench.request([0x01, 0x01] + u32LE(32)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(repeating: 0x08, count: 16))
        let kept = bench.model.runningState
        #expect(!kept.isEmpty)
        let later = Bench(flash: bench.flash)
        try later.model.restore(runningState: kept)
        later.model.connected(later.peripheral)
        #expect(later.model.runningState == kept)
    }

    @Test("a kept progress with a PRN past 16 bits is refused, not clamped to 65535 (found by fuzzing)")
    func runningStateWithAWidePRN() throws {
        let bench = Bench()
        bench.request([0x02, 0x0C, 0x00])
        #expect(bench.request([0x01, 0x01] + u32LE(32)) == [[0x60, 0x01, 0x01]])
        var kept = [UInt8](bench.model.runningState)
        // The PRN is the u32 after the magic (21 bytes), the object (1) and six u32s.
        let prn = 21 + 1 + 6 * 4
        #expect(kept[prn..<(prn + 4)] == [0x0C, 0x00, 0x00, 0x00])
        kept[prn + 2] = 0x03
        #expect(throws: OTAError.self) { try NordicBootloaderModel().restore(runningState: Data(kept)) }
    }

    /// How a test alters the kept progress: the u32 fields of
    /// ``NordicBootloaderModel/runningState`` after the magic (21 bytes) and the object (1) are the
    /// command size (0), offset (1), CRC (2), executed offset (3), executed CRC (4), object size + 1
    /// (5) and PRN (6).
    enum Tamper: Sendable {
        case none
        case set(fields: [Int], UInt32)
        case flip(field: Int)

        func apply(_ kept: inout [UInt8]) {
            switch self {
            case .none: break
            case .set(let fields, let value):
                for field in fields {
                    let start = 21 + 1 + field * 4
                    kept.replaceSubrange(start..<(start + 4), with: u32LE(value))
                }
            case .flip(let field): kept[21 + 1 + field * 4] ^= 0x01
            }
        }
    }

    @Test(
        "restored progress the flash does not bear out is not trusted: the object starts over, or all data progress goes (decision 0056)",
        arguments: [
            ("as kept", Tamper.none, 5096),
            ("offset past the image", .set(fields: [1], 60_000), 4096),
            ("offset past its object", .set(fields: [1], 8200), 4096),
            ("CRC not the flash's", .flip(field: 2), 4096),
            ("executed CRC not the flash's", .flip(field: 4), 0),
            ("executed offset (and offset) past the image", .set(fields: [1, 3], 40_000), 0),
        ] as [(String, Tamper, Int)])
    func restoredProgressCheckedAgainstTheFlash(what: String, tamper: Tamper, offset: Int) throws {
        let image = Image(size: 10_000, seed: 5)
        let bench = Bench()
        #expect(bench.executeInit(image.initPacket()) == [0x60, 0x04, 0x01])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[0..<4096]))
        #expect(bench.request([0x04]) == [[0x60, 0x04, 0x01]])
        #expect(bench.request([0x01, 0x02] + u32LE(4096)) == [[0x60, 0x01, 0x01]])
        bench.send(Array(image.bytes[4096..<5096]))

        var kept = [UInt8](bench.model.runningState)
        tamper.apply(&kept)
        let later = Bench(flash: bench.flash)
        try later.model.restore(runningState: Data(kept))
        later.model.connected(later.peripheral)
        let crc: UInt32 = CRC32.checksum(Data(image.bytes[0..<offset]))
        let expected: [UInt8] = [0x60, 0x06, 0x01] + u32LE(4096) + u32LE(UInt32(offset)) + u32LE(crc)
        #expect(later.request([0x06, 0x02]) == [expected], "\(what)")
        // The central resumes where Select said, and the image completes byte for byte.
        var start = offset
        if offset % 4096 != 0 {
            // Select said the object is partly there: the rest of it.
            let end = min(image.bytes.count, offset / 4096 * 4096 + 4096)
            later.send(Array(image.bytes[offset..<end]))
            #expect(later.request([0x04]) == [[0x60, 0x04, 0x01]], "\(what)")
            start = end
        }
        while start < image.bytes.count {
            let end = min(image.bytes.count, start + 4096)
            #expect(later.request([0x01, 0x02] + u32LE(UInt32(end - start))) == [[0x60, 0x01, 0x01]], "\(what)")
            later.send(Array(image.bytes[start..<end]))
            #expect(later.request([0x04]) == [[0x60, 0x04, 0x01]], "\(what)")
            start = end
        }
        #expect(later.flashBytes(0..<image.bytes.count) == image.bytes, "\(what)")
    }

    struct Bench {
        let model: NordicBootloaderModel
        let peripheral: FakePeripheral
        let flash: SimulatedFlash

        init(
            configuration: NordicBootloaderModel.Configuration = .init(),
            clock: ManualClock? = nil,
            flash: SimulatedFlash? = nil
        ) {
            self.flash =
                flash
                ?? SimulatedFlash(
                    capacity: 64 * 1024,
                    timing: FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(10), writeBytesPerSecond: 250_000)
                )
            let now: (@Sendable () -> Duration)? = clock.map { clock in { @Sendable in clock.now } }
            model = NordicBootloaderModel(configuration: configuration, clock: now)
            peripheral = FakePeripheral(flash: self.flash)
            model.connected(peripheral)
        }

        /// Writes a Control Point request; returns the notifications it caused.
        @discardableResult
        func request(_ bytes: [UInt8]) -> [[UInt8]] {
            let status = model.write(Data(bytes), to: DFUGATTProfile.controlPoint, kind: .withResponse, peripheral: peripheral)
            #expect(status == .success)
            return peripheral.takeNotifications().map { [UInt8]($0) }
        }

        /// Streams `bytes` to the Packet characteristic; returns the notifications (PRNs).
        @discardableResult
        func send(_ bytes: [UInt8], packetSize: Int = 244, expectAccepted: Bool = true) -> [[UInt8]] {
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + packetSize)
                let status = model.write(Data(bytes[start..<end]), to: DFUGATTProfile.packet, kind: .withoutResponse, peripheral: peripheral)
                #expect(status == .success || !expectAccepted)
                start = end
            }
            return peripheral.takeNotifications().map { [UInt8]($0) }
        }

        /// Create, send and Execute an init packet (PRN 0); returns the Execute response.
        func executeInit(_ dat: [UInt8]) -> [UInt8] {
            #expect(request([0x01, 0x01] + u32LE(UInt32(dat.count))) == [[0x60, 0x01, 0x01]])
            #expect(request([0x02, 0x00, 0x00]) == [[0x60, 0x02, 0x01]])
            send(dat)
            let answers = request([0x04])
            #expect(answers.count == 1)
            return answers.first ?? []
        }

        /// What the host does on a reboot: RAM lost, then the central connects again.
        func reboot() {
            model.rebooted()
            peripheral.clearReboots()
            model.connected(peripheral)
        }

        func flashBytes(_ range: Range<Int>) -> [UInt8] { [UInt8](flash.read(range)) }
    }

    /// A deterministic image with its init packet.
    struct Image {
        let bytes: [UInt8]

        init(size: Int, seed: UInt64) {
            var generator = SeededRandom(seed: seed)
            bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        }

        /// SHA-256, byte-reversed as init packets carry it.
        var hash: [UInt8] { Array(SHA256.hash(bytes).reversed()) }

        func initCommand(
            fwVersion: UInt64? = 1,
            hwVersion: UInt64? = 52,
            sdReq: [UInt64] = [0x0100],
            type: UInt64? = 0,
            appSize: UInt64? = nil,
            hashType: UInt64 = 3,
            hash: [UInt8]? = nil,
            withHash: Bool = true
        ) -> [UInt8] {
            TestProtobuf.initCommand(
                fwVersion: fwVersion,
                hwVersion: hwVersion,
                sdReq: sdReq,
                type: type,
                appSize: appSize ?? UInt64(bytes.count),
                hashType: hashType,
                hash: withHash ? (hash ?? self.hash) : nil
            )
        }

        func initPacket() -> [UInt8] { TestProtobuf.unsignedPacket(initCommand()) }

        func objects(_ size: Int) -> [[UInt8]] {
            stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min(bytes.count, $0 + size)]) }
        }
    }

    /// One init packet check: the packet, the bootloader build, the expected Execute response.
    struct ValidationCase: Sendable, CustomTestStringConvertible {
        let name: String
        let packet: [UInt8]
        let configuration: NordicBootloaderModel.Configuration
        let expected: [UInt8]

        var testDescription: String { name }

        init(_ name: String, _ packet: [UInt8], _ expected: [UInt8], configure: (inout NordicBootloaderModel.Configuration) -> Void = { _ in }) {
            self.name = name
            self.packet = packet
            var configuration = NordicBootloaderModel.Configuration()
            configure(&configuration)
            self.configuration = configuration
            self.expected = expected
        }

        static var all: [ValidationCase] {
            let image = Image(size: 3000, seed: 20)
            let unsigned = { (command: [UInt8]) in TestProtobuf.unsignedPacket(command) }
            let signed = { (command: [UInt8], type: UInt64, length: Int) in
                TestProtobuf.signedPacket(command, signatureType: type, signature: [UInt8](repeating: 0x5A, count: length))
            }
            let ok: [UInt8] = [0x60, 0x04, 0x01]
            let ext = { (code: UInt8) -> [UInt8] in [0x60, 0x04, 0x0B, code] }
            let requireSignature = { (configuration: inout NordicBootloaderModel.Configuration) in configuration.requiresSignature = true }
            return [
                ValidationCase("valid unsigned application", unsigned(image.initCommand()), ok),
                ValidationCase("signed, signature not required", signed(image.initCommand(), 0, 64), ok),
                ValidationCase("unsigned, signature required", unsigned(image.initCommand()), ext(0x08), configure: requireSignature),
                ValidationCase("signed ECDSA, signature required", signed(image.initCommand(), 0, 64), ok, configure: requireSignature),
                ValidationCase("ED25519 signature", signed(image.initCommand(), 1, 64), ext(0x0B), configure: requireSignature),
                ValidationCase("short signature", signed(image.initCommand(), 0, 10), [0x60, 0x04, 0x0A], configure: requireSignature),
                ValidationCase("unsigned and wrong hw: signature first", unsigned(image.initCommand(hwVersion: 1)), ext(0x08), configure: requireSignature),
                ValidationCase("no type", unsigned(image.initCommand(type: nil)), ext(0x04)),
                ValidationCase("external application type", unsigned(image.initCommand(type: 4)), ext(0x04)),
                ValidationCase("hash type SHA128", unsigned(image.initCommand(hashType: 2)), ext(0x09)),
                ValidationCase("no hash", unsigned(image.initCommand(withHash: false)), ext(0x09)),
                ValidationCase("wrong hash type and hw: hash first", unsigned(image.initCommand(hwVersion: 7, hashType: 1)), ext(0x09)),
                ValidationCase("no hw_version", unsigned(image.initCommand(hwVersion: nil)), ext(0x04)),
                ValidationCase("hw_version 51", unsigned(image.initCommand(hwVersion: 51)), ext(0x06)),
                ValidationCase("wrong hw and sd: hw first", unsigned(image.initCommand(hwVersion: 51, sdReq: [0xB7])), ext(0x06)),
                ValidationCase("other SoftDevice", unsigned(image.initCommand(sdReq: [0xB7])), ext(0x07)),
                ValidationCase("installed SoftDevice in a list", unsigned(image.initCommand(sdReq: [0xB7, 0x0100])), ok),
                ValidationCase("0xFFFE (15.3 has no 'any')", unsigned(image.initCommand(sdReq: [0xFFFE])), ext(0x07)),
                ValidationCase("0xFFFE honoured", unsigned(image.initCommand(sdReq: [0xFFFE])), ok) { $0.acceptsAnySoftDevice = true },
                ValidationCase("no sd_req", unsigned(image.initCommand(sdReq: [])), ok),
                ValidationCase("sd_req 0: app overwrites SD", unsigned(image.initCommand(sdReq: [0])), ok),
                ValidationCase("sd_req 0 then other SD", unsigned(image.initCommand(sdReq: [0, 0xB7])), ext(0x07)),
                ValidationCase("no SoftDevice, app needs one", unsigned(image.initCommand()), ext(0x07)) { $0.installedSoftDevice = nil },
                ValidationCase("no SoftDevice, sd_req 0", unsigned(image.initCommand(sdReq: [0])), ok) { $0.installedSoftDevice = nil },
                ValidationCase("wrong sd and old fw: sd first", unsigned(image.initCommand(fwVersion: 1, sdReq: [0xB7])), ext(0x07)) {
                    $0.installedApplicationVersion = 5
                },
                ValidationCase("older application", unsigned(image.initCommand(fwVersion: 4)), ext(0x05)) { $0.installedApplicationVersion = 5 },
                ValidationCase("same application version", unsigned(image.initCommand(fwVersion: 5)), ok) { $0.installedApplicationVersion = 5 },
                ValidationCase("older, downgrade allowed", unsigned(image.initCommand(fwVersion: 4)), ok) {
                    $0.installedApplicationVersion = 5
                    $0.preventsDowngrade = false
                },
                ValidationCase("no fw_version", unsigned(image.initCommand(fwVersion: nil)), ext(0x04)),
                ValidationCase("no fw_version, downgrade allowed", unsigned(image.initCommand(fwVersion: nil)), ok) { $0.preventsDowngrade = false },
                ValidationCase("bootloader not newer", unsigned(TestProtobuf.initCommand(fwVersion: 2, type: 2, blSize: 3000, hash: image.hash)), ext(0x05)) {
                    $0.installedBootloaderVersion = 2
                },
                ValidationCase("app_size 0", unsigned(image.initCommand(appSize: 0)), ext(0x04)),
                ValidationCase("app without app_size", unsigned(TestProtobuf.initCommand(type: 0, sdSize: 3000, hash: image.hash)), ext(0x04)),
                ValidationCase("bootloader too large", unsigned(TestProtobuf.initCommand(type: 2, blSize: 0x7000, hash: image.hash)), [0x60, 0x04, 0x04]),
                ValidationCase("image larger than the bank", unsigned(image.initCommand(appSize: 1 << 20)), [0x60, 0x04, 0x04]),
                ValidationCase("SD+BL sizes", unsigned(TestProtobuf.initCommand(fwVersion: 3, type: 3, sdSize: 2000, blSize: 1000, hash: image.hash)), ok),
                ValidationCase(
                    "debug packet on a debug bootloader", unsigned(TestProtobuf.initCommand(hwVersion: 9, appSize: 3000, hash: image.hash, isDebug: true)), ok
                ) {
                    $0.isDebugBuild = true
                },
                ValidationCase(
                    "debug packet on a release bootloader", unsigned(TestProtobuf.initCommand(hwVersion: 9, appSize: 3000, hash: image.hash, isDebug: true)),
                    ext(0x06)),
                ValidationCase("both command and signed_command", unsigned(image.initCommand()) + signed(image.initCommand(), 0, 64), [0x60, 0x04, 0x05]),
                ValidationCase("command without init", TestProtobuf.field(1, bytes: TestProtobuf.field(1, varint: 1)), [0x60, 0x04, 0x05]),
            ]
        }
    }
}

/// Little-endian bytes of a u32, as responses carry them.
private func u32LE(_ value: UInt32) -> [UInt8] {
    (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}
