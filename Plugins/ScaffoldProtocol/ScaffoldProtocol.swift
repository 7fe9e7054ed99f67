import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory scaffold-protocol NAME`: creates a new
/// vendor protocol target (`Sources/OTAProtocolNAME`) with a client, a device model and a
/// descriptor, and its test target, then prints the lines to add to Package.swift.
///
/// The device model is a stub that refuses every write, so the generated end-to-end test fails
/// until the protocol is filled in.
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
        for (relativePath, contents) in files {
            let url = root.appendingPathComponent(relativePath)
            if FileManager.default.fileExists(atPath: url.path), !force {
                throw ScaffoldError("\(relativePath) already exists; pass --force to overwrite")
            }
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: url)
            print("created \(relativePath)")
        }
        print(
            """

            Add these targets to Package.swift (in `targets:`):

                    .target(name: "\(target)", dependencies: ["OTACore"], swiftSettings: strictSettings),
                    .testTarget(
                        name: "\(target)Tests",
                        dependencies: ["\(target)", "OTACore", "OTATestSupport", "OTATransportSimulator"],
                        swiftSettings: strictSettings
                    ),

            then register `\(name)Protocol.descriptor` in your app's ToolEnvironment (or in
            Sources/OTACommandLine/Environment/BuiltInProtocols.swift), and run
            `swift test --filter \(target)Tests`: it fails until the device model and client are written.
            See docs/adding-a-protocol.md.
            """
        )
    }
}

struct ScaffoldError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
