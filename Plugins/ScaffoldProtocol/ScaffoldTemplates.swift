/// The files a new vendor protocol starts with.
enum ScaffoldTemplates {
    static func files(name: String) -> [(String, String)] {
        let target = "OTAProtocol\(name)"
        let lower = name.lowercased()
        return [
            ("Sources/\(target)/\(name)Protocol.swift", """
                import OTACore

                /// The \(name) update protocol. TODO: describe it, and its GATT layout.
                public enum \(name)Protocol {
                    /// TODO: the vendor's service UUID.
                    public static let service = GATTUUID("0000fff0-0000-1000-8000-00805f9b34fb")!
                    /// TODO: the vendor's characteristic(s).
                    public static let control = CharacteristicID(service: service, characteristic: GATTUUID("0000fff1-0000-1000-8000-00805f9b34fb")!)

                    /// The registry entry: `--protocol \(lower)`. Registering it brings its catalog family
                    /// and its demo device. TODO: declare parameters as `ProtocolParameter`s and list their
                    /// specs here; the descriptor refuses any other name.
                    public static let descriptor = ProtocolDescriptor(
                        name: "\(lower)",
                        summary: "TODO: one line about \(name)",
                        parameters: [],
                        makeClient: { (_) throws(OTAError) in \(name)Client() },
                        makeDeviceModel: { (_) throws(OTAError) in \(name)DeviceModel() },
                        defaultFamily: .init(name: "\(lower)-ota", summary: "TODO: devices with \(name) firmware", match: .init(services: [service])),
                        demoDevices: [
                            .init(name: "\(lower)-demo", hardwareProfile: "esp32s3-mtu244-2m", advertisedName: "\(name)-Demo", rssi: -60)
                        ]
                    )
                }

                """),
            ("Sources/\(target)/\(name)Client.swift", """
                import Foundation
                import OTACore

                /// The app side of \(name). TODO: keep the wire logic in value types and drive them here.
                public struct \(name)Client: UpdateProtocol {
                    public init() {}

                    public var requirements: [CharacteristicRequirement] {
                        [CharacteristicRequirement("\(name) Control", \(name)Protocol.control, properties: [.write, .notify])]
                    }

                    /// TODO: how the vendor's data writes are shaped (header, alignment, write kind).
                    public var dataWrites: DataWriteShape { DataWriteShape(kind: .withResponse) }

                    public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
                        // TODO: replace with the vendor's exchange. This sends the image in chunks written
                        // with response and expects the device to accept each one.
                        let plan = context.chunkPlan
                        context.enter(.transferring)
                        var offset = 0
                        while offset < image.count {
                            let chunk = plan.chunk(at: offset, in: image.count)
                            try await context.writeData(image[chunk], to: \(name)Protocol.control, covering: chunk)
                            offset = chunk.upperBound
                        }
                        return .accepted
                    }
                }

                """),
            ("Sources/\(target)/\(name)DeviceModel.swift", """
                import Foundation
                import OTACore

                /// The device side of \(name), for the simulator.
                ///
                /// TODO: implement the firmware's behaviour. Until then every write is refused, so the
                /// end-to-end test in Tests/\(target)Tests fails.
                public final class \(name)DeviceModel: DeviceModel {
                    public init() {}

                    public var services: [GATTServiceDefinition] {
                        [GATTServiceDefinition(uuid: \(name)Protocol.service, characteristics: [.init(uuid: \(name)Protocol.control.characteristic, properties: [.write, .notify])])]
                    }

                    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
                        .writeNotPermitted  // TODO: store the image in peripheral.flash
                    }
                }

                """),
            ("Tests/\(target)Tests/\(name)ProtocolTests.swift", """
                import Foundation
                import OTACore
                import OTATestSupport
                import OTATransportSimulator
                import Testing
                import \(target)

                @Suite struct \(name)ProtocolTests {
                    @Test(arguments: [1, 243, 244, 245, 100_000])
                    func imageArrivesByteIdentical(size: Int) async throws {
                        let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: \(name)DeviceModel())
                        let image = try UpdateHarness.image(size: size)
                        _ = try await harness.update(image, using: \(name)Client()).result.get()
                        #expect(harness.flashContents(size) == image.bytes)
                    }
                }

                """),
        ]
    }
}
