import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory scaffold-protocol NAME`: creates a new
/// vendor protocol target (`Sources/OTAProtocolNAME`) in the layout every protocol module shares —
/// a descriptor and GATT profile, `Client/` (a thin driver over a value-type state machine),
/// `Wire/` (command and reply codecs), `Device/` (the device model for the simulator) — and its
/// test target, then prints the Package.swift entries and the one registration line to add.
///
/// The generated protocol is a working template, so it builds and its state-machine, wire and
/// end-to-end tests pass; one test, `replaceTheTemplateWithTheVendorProtocol`, fails on purpose
/// with the checklist of what to fill in.
@main
struct ScaffoldProtocol: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let force = extractor.extractFlag(named: "force") > 0
        guard let name = extractor.remainingArguments.first, extractor.remainingArguments.count == 1 else {
            throw ScaffoldError("usage: swift package --allow-writing-to-package-directory scaffold-protocol NAME [--force]  (NAME like Acme)")
        }
        guard let first = name.first, first.isUppercase, name.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw ScaffoldError("protocol name '\(name)' must be UpperCamelCase letters and digits, like Acme")
        }
        let root = URL(fileURLWithPath: context.package.directoryURL.path)
        let target = "OTAProtocol\(name)"
        let files = ScaffoldTemplates.files(name: name)
        for file in files {
            let url = root.appendingPathComponent(file.path)
            if FileManager.default.fileExists(atPath: url.path), !force {
                throw ScaffoldError("\(file.path) already exists; pass --force to overwrite")
            }
        }
        for file in files {
            let url = root.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.contents.utf8).write(to: url)
            print("created \(file.path)")
        }
        print(
            """

            1. Add these targets to Package.swift (in `targets:`):

                    .target(name: "\(target)", dependencies: ["OTACore"], swiftSettings: strictSettings),
                    .testTarget(
                        name: "\(target)Tests",
                        dependencies: ["\(target)", "OTACore", "OTATestSupport", "OTATransportSimulator"],
                        swiftSettings: testSettings
                    ),

            2. Register it, with one line (and its import), where the app builds its registry:

               in the ota tool, Sources/OTACommandLine/Environment/BuiltInProtocols.swift:
                   import \(target)
                   \(name)Protocol.descriptor,
               and add "\(target)" to the dependencies of the OTACommandLine target in Package.swift;

               or in your own app (see Examples/custom-protocol/App/main.swift):
                   environment.registry.register(\(name)Protocol.descriptor)

            3. `swift test --filter \(target)Tests`: everything passes except
               replaceTheTemplateWithTheVendorProtocol, which lists what to fill in. Then
               `swift run ota protocols`, `swift run ota scan` (sim:\(name.lowercased())-demo) and
               `swift run ota update Examples/firmware/sample-app.bin --device sim:\(name.lowercased())-demo`.
               See docs/adding-a-protocol.md.
            """
        )
    }
}

struct ScaffoldError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
