import Foundation
import OTACommandLine
import OTACore
import Testing

/// The tool takes everything about a protocol from its descriptor: `ota protocols` from the
/// parameter declarations, the built-in catalog from the default families, the simulated fleet
/// from the demo devices.
@Suite struct ProtocolDescriptorCommandTests {
    /// A protocol that only an app registers: generic's client and device on its own service,
    /// with its own family and demo device and nothing else.
    private static func probeEnvironment() throws -> ToolEnvironment {
        let generic = try ToolEnvironment.standard.registry.descriptor(named: "generic")
        let service = "0000abcd-0000-1000-8000-00805f9b34fb"
        let probe = ProtocolDescriptor(
            name: "probe",
            summary: "a protocol registered by a test",
            parameters: generic.parameters,
            makeClient: generic.makeClient,
            makeDeviceModel: generic.makeDeviceModel,
            defaultFamily: .init(
                name: "probe-ota", summary: "Probes", match: .init(namePattern: GlobPattern("Probe-*"), services: [GATTUUID(service)!]),
                parameters: ["service-uuid": service]
            ),
            demoDevices: [
                .init(
                    name: "probe-1", hardwareProfile: "esp32-mtu185-1m", parameters: ["service-uuid": service], advertisedName: "Probe-0001",
                    manufacturerData: [0x1234: Data([0xAB])], rssi: -44
                )
            ]
        )
        var environment = ToolEnvironment.standard
        environment.userCatalogPath = nil
        environment.registry.register(probe)
        return environment
    }

    @Test func protocolsListsEveryDeclaredParameterWithItsDefaultAndRange() async throws {
        let (code, streams) = await runTool(["protocols"])
        #expect(code == 0)
        let registry = ToolEnvironment.standard.registry
        for descriptor in registry.all {
            #expect(streams.outputLines.contains(descriptor.name))
            for parameter in descriptor.parameters {
                let line = "  --param \(parameter.name)=…  \(parameter.helpText)"
                #expect(streams.outputLines.contains(line), "missing: \(line)")
                #expect(parameter.helpText.contains("(default \(parameter.defaultText))"))
                switch parameter.kind {
                case .integer(let range), .duration(milliseconds: let range):
                    #expect(parameter.helpText.contains("\(range.lowerBound)...\(range.upperBound)"))
                case .uuid, .text:
                    break
                }
            }
        }
        let parameterLines = streams.outputLines.filter { $0.hasPrefix("  --param ") }
        #expect(parameterLines.count == registry.all.map(\.parameters.count).reduce(0, +))
        #expect(streams.outputLines.contains("  --param batch=…  chunks per acknowledgement the app asks for, 1...1024 (default 16)"))
        #expect(
            streams.outputLines.contains(
                "  --param prn=…  packet receipt notification interval: 0...65535 (0 disables), or auto (adapts to the link) (default 12)"))
    }

    @Test func protocolsAsJSONGivesEachParametersKindRangeAndDefault() async throws {
        let (code, streams) = await runTool(["protocols", "--json", "--protocol", "framed"])
        #expect(code == 0)
        #expect(streams.outputLines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(streams.standardOutput.utf8)) as? [String: Any])
        let parameters = try #require(object["parameters"] as? [[String: Any]])
        let batch = try #require(parameters.first { $0["name"] as? String == "batch" })
        #expect(batch["kind"] as? String == "integer")
        #expect(batch["minimum"] as? Int == 1 && batch["maximum"] as? Int == 1024)
        #expect(batch["default"] as? String == "16")
        let timeout = try #require(parameters.first { $0["name"] as? String == "ack-timeout-ms" })
        #expect(timeout["kind"] as? String == "milliseconds")
        #expect(parameters.map { $0["name"] as? String } == ToolEnvironment.standard.registry.all.first { $0.name == "framed" }?.parameters.map(\.name))
    }

    @Test func anUnknownProtocolIsAUsageError() async {
        let (code, streams) = await runTool(["protocols", "--protocol", "zigbee"])
        #expect(code == 2)
        #expect(streams.standardError.hasPrefix("ota: error: unknown protocol 'zigbee' (available: esp-ble-ota, framed, generic, mcumgr, nordic-dfu)"))
    }

    /// docs/protocols/NAME.md embeds `ota protocols --markdown --protocol NAME`; a parameter added,
    /// renamed or given another default without the docs following fails here.
    @Test(arguments: ToolEnvironment.standard.registry.all.map(\.name))
    func theProtocolDocsListTheDeclaredParameters(name: String) async throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/protocols/\(name).md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let begin = "<!-- BEGIN ota protocols --markdown --protocol \(name) -->\n"
        let end = "<!-- END ota protocols --markdown --protocol \(name) -->"
        let start = try #require(text.range(of: begin), "\(docs.path) has no '\(begin)' marker")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex))
        let (code, streams) = await runTool(["protocols", "--markdown", "--protocol", name])
        #expect(code == 0)
        #expect(String(text[start.upperBound..<stop.lowerBound]) == streams.standardOutput, "regenerate with: ota protocols --markdown --protocol \(name)")
        let descriptor = try ToolEnvironment.standard.registry.descriptor(named: name)
        for parameter in descriptor.parameters {
            #expect(streams.standardOutput.contains("| `\(parameter.name)` | \(parameter.valueDescription) | `\(parameter.defaultText)` |"))
        }
    }

    @Test func theBuiltInCatalogAndFleetAreTheDescriptorsDefaults() async throws {
        let environment = ToolEnvironment.standard
        let catalog = try DeviceCatalog(defaultsOf: environment.registry, source: "built-in catalog")
        #expect(catalog.families.map(\.name) == ["generic-ota", "framed-ota", "nordic-secure-dfu", "mcumgr-smp", "esp-ble-ota"])
        #expect(catalog.families.map(\.protocolName) == ["generic", "framed", "nordic-dfu", "mcumgr", "esp-ble-ota"])
        let framed = catalog.families[1]
        #expect(framed.parameters == ["batch": "16", "window": "3"])
        #expect(framed.configuration?.resume.maximumAttempts == 5)
        #expect(framed.match.services == [GATTUUID("4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001")!])
        let nordic = catalog.families[2]
        #expect(nordic.parameters == ["prn": "12"])
        #expect(nordic.configuration?.verifyTimeout == .seconds(60))
        #expect(nordic.match.services == [GATTUUID("FE59")!])
        #expect(catalog.families[0].configuration == nil)

        #expect(environment.fleet.map(\.name) == ["acme-sensor", "bolt-lock", "nrf-tracker", "zephyr-sensor", "esp-lamp"])
        #expect(
            environment.fleet.map(\.profile.name) == ["esp32s3-mtu244-2m", "esp32s3-mtu244-1m", "nrf52840-mtu244-2m", "nrf52840-mtu244-2m", "esp32-mtu185-1m"])
        #expect(environment.fleet.map(\.firmwareProtocol) == ["generic", "framed", "nordic-dfu", "mcumgr", "esp-ble-ota"])
        #expect(environment.fleet.map(\.advertisedName) == ["ACME-Sensor-01A4", "BoltLock 7F21", "DfuTarg", "Zephyr SMP", "ESP-C919"])
        #expect(
            environment.fleet.map(\.manufacturerData) == [
                [:], [0x02E5: Data([0x42, 0x4C, 0x01])], [0x0059: Data([0x01])], [0x0059: Data([0x5A, 0x01])], [0x02E5: Data([0x4C, 0x41])],
            ])
        #expect(environment.fleet.map(\.rssi) == [-52, -67, -58, -61, -61])
        // Every registered demo device resolves to a simulated profile (none is silently dropped).
        #expect(environment.fleet.count == environment.registry.all.map(\.demoDevices.count).reduce(0, +))
    }

    @Test func registeringADescriptorAddsItsFamilyAndDemoDevice() async throws {
        let environment = try Self.probeEnvironment()
        #expect(environment.fleet.map(\.name) == ["acme-sensor", "bolt-lock", "nrf-tracker", "zephyr-sensor", "esp-lamp", "probe-1"])

        let scan = CapturedStreams()
        #expect(await CommandLineTool.run(["scan", "--json"], streams: scan, environment: environment) == 0)
        let objects = try scan.outputLines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(
            objects.map { $0["address"] as? String } == [
                "sim:acme-sensor", "sim:bolt-lock", "sim:nrf-tracker", "sim:zephyr-sensor", "sim:esp-lamp", "sim:probe-1",
            ])
        let probe = try #require(objects.last)
        #expect(probe["family"] as? String == "probe-ota")
        #expect(probe["protocol"] as? String == "probe")
        #expect(probe["name"] as? String == "Probe-0001")
        #expect(probe["rssi"] as? Int == -44)

        let protocols = CapturedStreams()
        #expect(await CommandLineTool.run(["protocols"], streams: protocols, environment: environment) == 0)
        #expect(protocols.outputLines.contains("probe"))

        let image = try temporaryImage(size: 4000)
        defer { try? FileManager.default.removeItem(at: image) }
        let dryRun = CapturedStreams()
        #expect(await CommandLineTool.run(["update", image.path, "--device", "sim:probe-1", "--dry-run"], streams: dryRun, environment: environment) == 0)
        #expect(dryRun.standardOutput.contains("because: sim:probe-1 matches family 'probe-ota' (built-in catalog): name matches 'Probe-*'"))
        #expect(dryRun.standardOutput.contains("protocol: probe"))

        let update = CapturedStreams()
        let code = await CommandLineTool.run(
            ["update", image.path, "--device", "sim:probe-1", "--sim-speed", "max"], streams: update, environment: environment)
        #expect(code == 0, "\(update.standardError)")
        #expect(update.standardOutput.contains("over probe in"))
    }

    @Test func additionalFleetDevicesFollowTheDemoDevices() throws {
        var environment = ToolEnvironment.standard
        let demo = ProtocolDescriptor.DemoDevice(name: "spare", hardwareProfile: "nrf52840-mtu244-2m", advertisedName: "Spare", rssi: -90)
        environment.additionalFleet.append(try SimulatedFleetDevice(demo, firmwareProtocol: "generic"))
        #expect(environment.fleet.map(\.name) == ["acme-sensor", "bolt-lock", "nrf-tracker", "zephyr-sensor", "esp-lamp", "spare"])
        #expect(environment.fleet.last?.profile.name == "nrf52840-mtu244-2m")
        let unknown = ProtocolDescriptor.DemoDevice(name: "x", hardwareProfile: "esp8266", advertisedName: "X", rssi: -1)
        let error = try #require(throws: OTAError.self) { try SimulatedFleetDevice(unknown, firmwareProtocol: "generic") }
        #expect(error.message.hasPrefix("no simulated device profile 'esp8266'"))
    }

    @Test func aFamilyDefinedAgainCollidesWithTheDerivedOne() async throws {
        var environment = try Self.probeEnvironment()
        environment.builtInCatalogs = [
            (source: "extra", json: #"{"catalog": 1, "families": [{"name": "probe-ota", "match": {"name": "x"}, "protocol": "probe"}]}"#)
        ]
        let streams = CapturedStreams()
        #expect(await CommandLineTool.run(["scan"], streams: streams, environment: environment) == 3)
        #expect(streams.standardError.contains("family 'probe-ota' is defined in both built-in catalog and extra"))
    }
}
