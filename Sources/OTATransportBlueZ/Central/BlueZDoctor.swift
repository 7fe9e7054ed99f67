#if os(Linux)
import Dispatch
import Foundation
import OTACore

/// Checks what a BlueZ update needs on this machine, and says how to fix what is missing.
///
/// ```swift
/// let report = await BlueZDoctor().examine()
/// for finding in report.findings { print("\(finding.problem): \(finding.fix)") }
/// ```
///
/// It looks at: the D-Bus bus, whether bluetoothd owns `org.bluez` on it, bluetoothd's version,
/// the controllers the kernel shows (`/sys/class/bluetooth`), and each adapter's address, power
/// and discovery state. It never starts or changes anything.
public struct BlueZDoctor: Sendable {
    /// The bus bluetoothd should be on.
    public let bus: DBusConnection.Bus
    /// Where the kernel lists Bluetooth controllers.
    public let controllerDirectory: String
    private let versionProbe: @Sendable () async -> String?
    private let settingsProbe: @Sendable (_ version: String?) async -> BluetoothdGATTSettings

    /// Creates a doctor.
    ///
    /// - Parameters:
    ///   - bus: where bluetoothd should be; `.system` except in tests.
    ///   - controllerDirectory: where the kernel lists controllers (`/sys/class/bluetooth`).
    ///   - versionProbe: finds bluetoothd's version; by default ``bluetoothdVersion()``.
    ///   - settingsProbe: reads bluetoothd's `[GATT] Channels` given its version; by default
    ///     ``BluetoothdGATTSettings/current(version:processes:)``.
    public init(
        bus: DBusConnection.Bus = .system,
        controllerDirectory: String = "/sys/class/bluetooth",
        versionProbe: (@Sendable () async -> String?)? = nil,
        settingsProbe: (@Sendable (_ version: String?) async -> BluetoothdGATTSettings)? = nil
    ) {
        self.bus = bus
        self.controllerDirectory = controllerDirectory
        self.versionProbe = versionProbe ?? { await BlueZDoctor.bluetoothdVersion() }
        self.settingsProbe = settingsProbe ?? { version in await BluetoothdGATTSettings.current(version: version) }
    }

    /// Examines the machine. Never throws: every failure becomes a ``BlueZDoctorReport/Finding``.
    public func examine() async -> BlueZDoctorReport {
        var report = BlueZDoctorReport(bus: BlueZFailure.describe(bus))
        report.bluezVersion = await versionProbe()
        report.kernelControllers = kernelControllers()
        if case .failure(let missing) = LibDBus.shared {
            report.findings.append(
                .init(problem: "libdbus cannot be loaded (\(missing.detail))", fix: "install \(DBusLibraryUnavailable.package)"))
            return report
        }
        let session: BlueZSession
        do {
            // Connected here rather than through BlueZSession.open, whose error carries a hint of
            // its own: the finding states the cause once and gives its one fix.
            session = BlueZSession(connection: try await DBusConnection.connect(to: bus), bus: bus)
        } catch {
            report.findings.append(
                .init(
                    problem: "\(report.bus) cannot be reached (\(BlueZFailure.busCause(error)))",
                    fix: "start D-Bus ('systemctl start dbus'; 'systemctl status dbus' shows why it stopped) or check DBUS_SYSTEM_BUS_ADDRESS"))
            return report
        }
        report.isBusReachable = true
        await examine(over: session, into: &report)
        await session.close()
        return report
    }

    private func examine(over session: BlueZSession, into report: inout BlueZDoctorReport) async {
        do {
            report.isBluetoothdRunning = try await session.isBluetoothdRunning()
        } catch {
            report.findings.append(
                .init(
                    problem: "cannot ask \(report.bus) about bluetoothd (\(error.message))",
                    fix: "check the D-Bus daemon"))
            return
        }
        guard report.isBluetoothdRunning else {
            report.findings.append(
                .init(
                    problem: "bluetoothd is not running (org.bluez is not on \(report.bus))",
                    fix: report.bluezVersion == nil
                        ? "install BlueZ ('apt-get install bluez') and start it with 'systemctl start bluetooth'"
                        : "start it with 'systemctl start bluetooth'"))
            if report.kernelControllers?.isEmpty == true { report.findings.append(noControllerFinding) }
            return
        }
        report.gattSettings = await settingsProbe(report.bluezVersion)
        let tree: BlueZObjectTree
        do {
            tree = try await session.objectTree()
            report.adapters = tree.adapters
        } catch {
            report.findings.append(
                .init(
                    problem: "cannot read bluetoothd's objects (\(error.message))",
                    fix: "restart it with 'systemctl restart bluetooth'"))
            return
        }
        if report.adapters.isEmpty {
            report.findings.append(
                report.kernelControllers?.isEmpty == true
                    ? noControllerFinding
                    : .init(
                        problem: "bluetoothd sees no Bluetooth adapter",
                        fix: "check 'rfkill list', 'dmesg | grep -i bluetooth', then 'systemctl restart bluetooth'"))
        }
        for adapter in report.adapters where !adapter.isPowered {
            let (problem, fix) = BlueZFailure.poweredOffFinding(adapter, among: report.adapters)
            report.findings.append(.init(problem: problem, fix: fix))
        }
        if let settings = report.gattSettings {
            for device in tree.devices where device.isConnected {
                let peer = await peerEATTSupport(of: device, in: tree, over: session)
                report.connectedDevices.append(.init(address: device.address, bearers: BlueZBearerAssessment(settings: settings, peer: peer)))
            }
        }
    }

    /// Whether a connected device offers EATT: its Server Supported Features, read (BlueZ
    /// exports them once the services are resolved).
    private func peerEATTSupport(
        of device: BlueZObjectTree.Device, in tree: BlueZObjectTree, over session: BlueZSession
    ) async -> PeerEATTSupport {
        guard device.isServicesResolved else { return .unknown("its services are not resolved yet") }
        guard
            let features = tree.gattCharacteristics(of: device.path).values.sorted(by: { $0.path < $1.path })
                .first(where: { $0.uuid == PeerEATTSupport.serverSupportedFeatures })
        else { return .notSupported("it has no Server Supported Features characteristic") }
        do {
            let reply = try await session.call(
                features.path, BlueZ.Interface.gattCharacteristic, "ReadValue", [.variantDictionary([:])],
                timeout: .seconds(5), session.context("reading the Server Supported Features of \(device.address)"))
            guard let bytes = reply.arguments.first?.bytes else { return .unknown("its Server Supported Features read returned no bytes") }
            return PeerEATTSupport(serverSupportedFeatures: Data(bytes))
        } catch {
            return .unknown("reading its Server Supported Features failed: \(error.message)")
        }
    }

    private var noControllerFinding: BlueZDoctorReport.Finding {
        .init(
            problem: "the kernel shows no Bluetooth controller (\(controllerDirectory) is empty)",
            fix: "plug in an adapter or load its driver; in a VM without Bluetooth use the bluez-vm scripts")
    }

    /// The controller names the kernel lists (`hci0`…), or `nil` when the directory is missing.
    private func kernelControllers() -> [String]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: controllerDirectory) else { return nil }
        return names.filter { $0.hasPrefix("hci") && !$0.contains(":") }.sorted()
    }

    /// bluetoothd's version ("5.66") from `bluetoothd --version`, or from `bluetoothctl --version`;
    /// `nil` when neither is installed.
    ///
    /// The programs run on a dispatch thread, not on Swift's cooperative pool.
    public static func bluetoothdVersion() async -> String? {
        let candidates: [(String, [String])] = [
            ("/usr/libexec/bluetooth/bluetoothd", ["--version"]),
            ("/usr/lib/bluetooth/bluetoothd", ["--version"]),
            ("/usr/sbin/bluetoothd", ["--version"]),
            ("/usr/bin/bluetoothctl", ["--version"]),
        ]
        for (path, arguments) in candidates where FileManager.default.isExecutableFile(atPath: path) {
            if let output = await run(path, arguments), let version = parseVersion(output) { return version }
        }
        return nil
    }

    /// The first version number ("5.66") in a program's output.
    static func parseVersion(_ output: String) -> String? {
        let words = output.split(whereSeparator: { $0.isWhitespace || $0 == ":" })
        return words.first { word in
            word.contains(".") && word.first?.isNumber == true && word.allSatisfy { $0.isNumber || $0 == "." }
        }.map(String.init)
    }

    /// Runs a program and returns its standard output, or `nil` when it cannot run.
    private static func run(_ path: String, _ arguments: [String]) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: path)
                process.arguments = arguments
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                process.standardInput = FileHandle.nullDevice
                do {
                    try process.run()
                } catch {
                    continuation.resume(returning: nil)
                    return
                }
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
    }
}
#endif
