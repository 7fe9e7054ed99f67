#if os(Linux)
import Foundation
import OTACore

/// How many ATT bearers bluetoothd is configured to open to an EATT-capable device: its
/// `[GATT] Channels` setting, where that came from, and what it means.
///
/// With `Channels` above 1, bluetoothd connects `Channels − 1` Enhanced ATT bearers (L2CAP PSM
/// 0x27) beside the fixed ATT channel to every device whose GATT Server Supported Features has the
/// EATT bit. BlueZ 5.66 then hands each write command to whichever bearer is ready first
/// (`bt_att_send` queues it on the shared `write_queue`, `wakeup_writer` arms every bearer and
/// `can_write_data` → `pick_next_send_op` on the first writable one pops it), and nothing orders
/// bearers against each other, so consecutive writes without response can reach the device out of
/// order. See docs/decisions/0020-eatt-ordering.md.
public struct BluetoothdGATTSettings: Sendable, Hashable, CustomStringConvertible {
    /// Where the channel count came from.
    public enum Source: Sendable, Hashable {
        /// `Channels = N` in `[GATT]` of this file.
        case file(String)
        /// The file (this path) does not set it; bluetoothd's default for its version applies.
        case versionDefault(file: String?, version: String)
        /// Neither the file nor the version is known: 5.66's default (3) is assumed.
        case assumed(why: String)
    }

    /// ATT bearers per device, 1...5 (1: no EATT).
    public var channels: Int
    /// Where ``channels`` came from.
    public var source: Source

    /// Creates settings.
    public init(channels: Int, source: Source) {
        self.channels = channels
        self.source = source
    }

    /// Whether bluetoothd opens EATT bearers to devices that support them.
    public var isEATTEnabled: Bool { channels > 1 }

    /// The file that sets (or would set) ``channels``.
    public var configurationFile: String {
        switch source {
        case .file(let path): path
        case .versionDefault(let file, _): file ?? Self.defaultConfigurationPath
        case .assumed: Self.defaultConfigurationPath
        }
    }

    /// `/etc/bluetooth/main.conf`, where bluetoothd reads its settings unless started with `-f`.
    public static let defaultConfigurationPath = "/etc/bluetooth/main.conf"

    /// "Channels = 3 (bluetoothd 5.66's default; /etc/bluetooth/main.conf does not set it)".
    public var description: String {
        switch source {
        case .file(let path): "Channels = \(channels) (\(path))"
        case .versionDefault(let file?, let version):
            "Channels = \(channels) (bluetoothd \(version)'s default; \(file) does not set it)"
        case .versionDefault(nil, let version): "Channels = \(channels) (bluetoothd \(version)'s default)"
        case .assumed(let why): "Channels = \(channels) assumed (BlueZ 5.66's default; \(why))"
        }
    }

    /// Settles the channel count from what could be read: the `[GATT] Channels` of the
    /// configuration file's text (`nil` when unreadable) and bluetoothd's version.
    public static func settle(configuration text: String?, path: String, version: String?) -> BluetoothdGATTSettings {
        if let text, let channels = channels(inConfiguration: text) {
            return BluetoothdGATTSettings(channels: channels, source: .file(path))
        }
        if let version, let channels = defaultChannels(forVersion: version) {
            return BluetoothdGATTSettings(channels: channels, source: .versionDefault(file: text == nil ? nil : path, version: version))
        }
        let why = text == nil ? "\(path) cannot be read" : "\(path) does not set it"
        return BluetoothdGATTSettings(
            channels: 3, source: .assumed(why: version == nil ? "\(why), bluetoothd's version unknown" : why))
    }

    /// The `Channels` of the `[GATT]` group in a bluetoothd configuration file, clamped to 1...5
    /// as bluetoothd does (`parse_config` in `src/main.c`); `nil` when the file does not set it
    /// or its value is not a number (bluetoothd then keeps its default too).
    public static func channels(inConfiguration text: String) -> Int? {
        var group = ""
        var found: Int?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                group = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard group == "GATT", let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard key == "Channels" else { continue }
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            // GKeyFile: the last occurrence of a key in a group wins; a non-number is an error.
            found = Int(value).map { min(max($0, 1), 5) }
        }
        return found
    }

    /// bluetoothd's default `Channels` for a version: 3 up to 5.66, 1 from 5.67 on (BlueZ commit
    /// ab3ff0d2c, "main: Disable EATT by default"); `nil` for a version that does not parse.
    public static func defaultChannels(forVersion version: String) -> Int? {
        let parts = version.split(separator: ".").map { Int($0) }
        guard parts.count >= 2, let major = parts[0], let minor = parts[1] else { return nil }
        return (major, minor) <= (5, 66) ? 3 : 1
    }

    /// The configuration file of a bluetoothd started with `arguments` (its command line without
    /// the program): `-f FILE`, `-fFILE`, `--configfile FILE` or `--configfile=FILE`; otherwise
    /// ``defaultConfigurationPath``.
    public static func configurationPath(commandLine arguments: [String]) -> String {
        var index = arguments.startIndex
        var path = defaultConfigurationPath
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "-f" || argument == "--configfile", index + 1 < arguments.endIndex {
                path = arguments[index + 1]
                index += 1
            } else if argument.hasPrefix("--configfile=") {
                path = String(argument.dropFirst("--configfile=".count))
            } else if argument.hasPrefix("-f"), argument.count > 2, !argument.hasPrefix("--") {
                path = String(argument.dropFirst(2))
            }
            index += 1
        }
        return path
    }

    /// Reads the settings of the bluetoothd running on this machine: its command line from
    /// `/proc/PID/cmdline` (the process whose `comm` is `bluetoothd`), the `[GATT] Channels` of
    /// its configuration file, and its version (`version`, when already known, else
    /// ``BlueZDoctor/bluetoothdVersion()``).
    public static func current(version knownVersion: String? = nil, processes: String = "/proc") async -> BluetoothdGATTSettings {
        let arguments = bluetoothdCommandLine(processes: processes)
        let path = configurationPath(commandLine: arguments ?? [])
        let text = try? String(contentsOfFile: path, encoding: .utf8)
        // The version matters only when the file does not set Channels.
        var version = knownVersion
        if version == nil, text.flatMap(channels(inConfiguration:)) == nil { version = await BlueZDoctor.bluetoothdVersion() }
        return settle(configuration: text, path: path, version: version)
    }

    /// bluetoothd's arguments (without the program), from the first process under `processes`
    /// named `bluetoothd`; `nil` when none is found.
    static func bluetoothdCommandLine(processes: String) -> [String]? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: processes) else { return nil }
        for entry in entries.sorted() where entry.allSatisfy(\.isNumber) {
            let directory = "\(processes)/\(entry)"
            guard let name = try? String(contentsOfFile: "\(directory)/comm", encoding: .utf8),
                name.trimmingCharacters(in: .whitespacesAndNewlines) == "bluetoothd",
                let line = FileManager.default.contents(atPath: "\(directory)/cmdline")
            else { continue }
            let words = line.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            return Array(words.dropFirst().filter { !$0.isEmpty })
        }
        return nil
    }
}

/// Whether a device offers EATT, from its GATT Server Supported Features characteristic (0x2B3A
/// in the Generic Attribute service, bit 0: EATT supported), which BlueZ exports on D-Bus.
public enum PeerEATTSupport: Sendable, Hashable {
    /// Bit 0 of Server Supported Features is set.
    case supported
    /// The device has no Server Supported Features, or bit 0 is clear.
    case notSupported(String)
    /// It could not be told (the read failed).
    case unknown(String)

    /// The Server Supported Features characteristic, 0x2B3A.
    public static let serverSupportedFeatures = GATTUUID("2b3a")!

    /// What a read of Server Supported Features returned.
    public init(serverSupportedFeatures value: Data) {
        if let first = value.first, first & 0x01 != 0 {
            self = .supported
        } else if value.isEmpty {
            self = .notSupported("its Server Supported Features value is empty")
        } else {
            self = .notSupported("its Server Supported Features (\(Hex.byteList(value))) lack the EATT bit")
        }
    }
}

/// Whether consecutive writes without response may reach the device out of order, and why: the
/// decision behind ``BlueZConnector/Configuration/WriteOrdering/automatic``.
public struct BlueZBearerAssessment: Sendable, Hashable {
    /// Whether more than one ATT bearer can carry the writes, so their order is not kept.
    public var mayReorder: Bool
    /// One sentence: the evidence and what it means.
    public var reason: String

    /// Decides from bluetoothd's settings and the device's EATT support. Several bearers need
    /// both; a device whose support is unknown is taken to have it (the cost of being wrong that
    /// way is speed, the other way a corrupted update).
    public init(settings: BluetoothdGATTSettings, peer: PeerEATTSupport) {
        guard settings.isEATTEnabled else {
            mayReorder = false
            reason = "one ATT bearer: bluetoothd runs with \(settings)"
            return
        }
        switch peer {
        case .notSupported(let why):
            mayReorder = false
            reason = "one ATT bearer: the device does not offer EATT (\(why))"
        case .supported:
            mayReorder = true
            reason =
                "EATT: bluetoothd opens up to \(settings.channels) ATT bearers (\(settings)) and the device offers EATT, so BlueZ hands consecutive write commands to whichever bearer is free and they can arrive out of order"
        case .unknown(let why):
            mayReorder = true
            reason =
                "EATT may be in use: bluetoothd opens up to \(settings.channels) ATT bearers (\(settings)) and whether the device offers EATT is unknown (\(why)), so write commands could arrive out of order"
        }
    }
}
#endif
