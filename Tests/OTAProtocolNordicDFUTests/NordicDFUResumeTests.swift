import Foundation
import OTACore
import OTAProtocolNordicDFU
import OTATestSupport
import OTATransportSimulator
import Synchronization
import Testing

/// Resume through the engine and the simulated bootloader: the Select(command) and Select(data)
/// answers read for the resume point are the run's checkpoint, and the init packet decides
/// whether the data the bootloader holds may be kept.
@Suite struct NordicDFUResumeTests {
    /// A disconnect mid-object and at an object boundary (`bytes` of the image received).
    @Test(arguments: [10_000, 8192])
    func aResumeReusesTheCheckpointAndLeavesTheInitPacketAlone(bytes: Int) async throws {
        let bootloader = RecordingBootloader()
        let harness = UpdateHarness(profile: .nrf52840, model: bootloader)
        let image = try Self.image(firmwareVersion: 1)
        var faults = LinkFaults()
        faults.disconnectAtBytes = [image.initPacket.count + bytes]
        harness.device.faults = faults
        let outcome = try await harness.update(image, using: NordicDFUClient())
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(bootloader.model.installedImage?.sha256 == SHA256.hash(image.bytes))
        let resumed = try #require(outcome.notes.firstIndex { $0.hasPrefix("resuming: bootloader holds") })
        let after = outcome.notes[resumed...]
        #expect(
            after.contains {
                $0.hasPrefix("the bootloader holds this init packet, executed, and") && $0.hasSuffix("bytes of this image; continuing without sending it again")
            })
        #expect(!after.contains("the bootloader already holds this init packet"))
        #expect(!after.contains { $0.contains("sending the object again") })
        // On the wire after the reconnect: both Selects for the resume point, command first;
        // then nothing touches the command object again.
        let connection = try #require(bootloader.requestsByConnection.last)
        #expect(Array(connection.prefix(3)) == [.select(.command), .select(.data), .setPRN(12)])
        // At the boundary the held object is executed first; mid-object the rest is streamed.
        #expect(connection.dropFirst(3).first == (bytes % 4096 == 0 ? .execute : .calculateChecksum))
        #expect(!connection.dropFirst().contains { $0 == .select(.command) || $0 == .create(.command, size: UInt32(image.initPacket.count)) })
        #expect(bootloader.initPacketAtLastExecute == image.initPacket)
    }

    /// An update of an image under init packet A is interrupted; the same bytes are then sent
    /// under init packet B (another fw_version). The resume point shows a prefix of the image,
    /// but under A: the run must send B, which discards the data, and start the data over.
    @Test func theSameImageUnderAnotherInitPacketIsSentAgainUnderTheNewOne() async throws {
        let bootloader = RecordingBootloader()
        var harness = UpdateHarness(profile: .nrf52840, model: bootloader)
        let initA = try Self.image(firmwareVersion: 1)
        let initB = try Self.image(firmwareVersion: 2)
        #expect(initA.bytes == initB.bytes)
        #expect(initA.initPacket != initB.initPacket)

        // Image X under A, interrupted mid-object with no resume: the bootloader keeps A and 10000 bytes.
        var noResume = harness.configuration
        noResume.resume.maximumAttempts = 0
        harness.configuration = noResume
        var faults = LinkFaults()
        faults.disconnectAtBytes = [initA.initPacket.count + 10_000]
        harness.device.faults = faults
        let interrupted = try await harness.update(initA, using: NordicDFUClient())
        #expect(try interrupted.failure().code == .disconnected)
        #expect(bootloader.model.progress.offset >= 10_000)
        #expect(bootloader.model.storedSettings?.initPacket == initA.initPacket)

        // A new engine run of the same bytes under B. The link drops before its first request,
        // so it goes through the resume point while the bootloader still holds X's prefix under A.
        harness.configuration.resume = ResumePolicy()
        let outcome = try await harness.update(initB, using: NordicDFUClient(), connector: DropsFirstLink(device: harness.device))
        let report = try outcome.result.get()
        #expect(report.resumes == 1)
        #expect(outcome.notes.contains { $0.hasPrefix("resuming: bootloader holds") && $0.contains("under another init packet") })
        #expect(outcome.notes.contains { $0.hasPrefix("the bootloader holds another init packet (\(initA.initPacket.count) bytes") })

        // B was the executed init packet the image was validated against (the settings drop it
        // once the image is installed), and the image is installed byte-identically under B.
        #expect(bootloader.initPacketAtLastExecute == initB.initPacket)
        #expect(bootloader.model.storedSettings?.applicationVersion == 2)
        let installed = try #require(bootloader.model.installedImage)
        #expect(installed.version == 2)
        #expect(installed.sha256 == SHA256.hash(initB.bytes))
        #expect(harness.flashContents(initB.count) == initB.bytes)

        // On the wire after the reconnect: both Selects, then B created at once (no Select(command)
        // again), and the data selected again once B is executed: it starts over from byte 0.
        let connection = try #require(bootloader.requestsByConnection.last)
        #expect(Array(connection.prefix(3)) == [.select(.command), .select(.data), .create(.command, size: UInt32(initB.initPacket.count))])
        #expect(connection.filter { $0 == .select(.command) }.count == 1)
        let reselect = try #require(connection.dropFirst(2).firstIndex(of: .select(.data)))
        #expect(connection[..<reselect].contains(.execute))
        #expect(bootloader.packetBytesByConnection.last == initB.initPacket.count + initB.count)
    }

    /// A raw 20000-byte image with an unsigned init packet of `firmwareVersion`.
    static func image(firmwareVersion: UInt32) throws -> FirmwareImage {
        let raw = try UpdateHarness.image(size: 20_000, seed: 3)
        let initPacket = InitPacketBuilder.unsignedApplication(for: raw.bytes, firmwareVersion: firmwareVersion)
        return try FirmwareImage(bytes: raw.bytes, name: raw.name, attachments: [NordicDFUClient.initPacketKey: initPacket])
    }
}

extension FirmwareImage {
    fileprivate var initPacket: Data { attachments[NordicDFUClient.initPacketKey] ?? Data() }
}

/// The simulated bootloader, with the Control Point requests and the Packet bytes it received
/// on each connection.
final class RecordingBootloader: DeviceModel {
    let model = NordicBootloaderModel()
    private let log = Mutex<(requests: [[DFURequest]], packetBytes: [Int], initPacket: Data?)>(([], [], nil))

    /// The decoded Control Point requests, one list per connection.
    var requestsByConnection: [[DFURequest]] { log.withLock { $0.requests } }
    /// Bytes written to DFU Packet, one count per connection.
    var packetBytesByConnection: [Int] { log.withLock { $0.packetBytes } }
    /// The executed init packet in the bootloader's settings when the last Execute arrived: for
    /// the final one, what the image was validated and installed under.
    var initPacketAtLastExecute: Data? { log.withLock { $0.initPacket } }

    var services: [GATTServiceDefinition] { model.services }

    func connected(_ peripheral: any PeripheralContext) {
        log.withLock {
            $0.requests.append([])
            $0.packetBytes.append(0)
        }
        model.connected(peripheral)
    }

    func disconnected() { model.disconnected() }
    func rebooted() { model.rebooted() }

    func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        let request = characteristic == DFUGATTProfile.controlPoint ? DFURequest(decoding: value) : nil
        let stored = request == .execute ? model.storedSettings?.initPacket : nil
        log.withLock { log in
            guard !log.requests.isEmpty else { return }
            if let request {
                log.requests[log.requests.count - 1].append(request)
                if request == .execute { log.initPacket = stored }
            } else if characteristic == DFUGATTProfile.packet {
                log.packetBytes[log.packetBytes.count - 1] += value.count
            }
        }
        return model.write(value, to: characteristic, kind: kind, peripheral: peripheral)
    }

    func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        model.read(characteristic, peripheral: peripheral)
    }
}

/// Connects to the device, dropping the first link as soon as it is up (before any request).
final class DropsFirstLink: Connector {
    let device: SimulatedDevice
    private let dropped = Mutex(false)

    init(device: SimulatedDevice) { self.device = device }

    var deviceDescription: String { device.address }

    func connect() async throws(TransportError) -> any Transport {
        let transport = try await SimulatedConnector(device: device).connect()
        let first = dropped.withLock { dropped in
            defer { dropped = true }
            return !dropped
        }
        if first { device.dropConnection(reason: "link lost right after connecting") }
        return transport
    }
}
