import Foundation
import OTACore

/// What a Nordic DFU package holds and whether it is consistent: the result of
/// ``DFUPackage/inspect(contentsOf:)``, made for an `ota inspect app.zip` command.
///
/// ``problems`` are what ``DFUPackage`` would refuse the package for; ``warnings`` do not stop
/// an update. Both are complete one-line messages that name the file and the field.
/// ``report`` is a multi-line summary for people.
public struct DFUPackageInspection: Sendable, CustomStringConvertible {
    /// The package name ("app.zip", or "app.bin + app.dat" for a pair).
    public let name: String
    /// The manifest, for a zip package.
    public let manifest: DFUManifest?
    /// The firmware parts in transfer order.
    public let parts: [DFUPackagePart]
    /// Reasons the package cannot be used, one line each; empty when it is consistent.
    public let problems: [String]
    /// Things worth knowing that do not stop an update, one line each.
    public let warnings: [String]
    /// The human-readable summary.
    public let report: String

    /// Whether the package can be used: no ``problems``.
    public var isConsistent: Bool { problems.isEmpty }

    /// The ``report``.
    public var description: String { report }

    /// The report and problems in the protocol-neutral shape `ota inspect` prints.
    public var firmwareInspection: FirmwareInspection {
        FirmwareInspection(report: report, problems: problems)
    }

    /// Largest init packet an SDK 15.3 bootloader accepts (`INIT_COMMAND_MAX_SIZE`).
    static let bootloaderInitPacketLimit = 512

    /// Checks the parts; `prefix` ("app.zip: " or "") starts every message; `notes` are
    /// warnings found while reading.
    init(name: String, prefix: String, manifest: DFUManifest?, parts: [DFUPackagePart], notes: [String]) {
        self.name = name
        self.manifest = manifest
        self.parts = parts
        var problems: [String] = []
        var warnings = notes
        if manifest != nil {
            problems += Self.checkCombination(parts.map(\.kind), prefix: prefix)
        }
        var checks: [PackagePartCheck] = []
        for part in parts {
            let check = PackagePartCheck(part, prefix: prefix, fromManifest: manifest != nil)
            problems += check.problems
            warnings += check.warnings
            checks.append(check)
        }
        self.problems = problems
        self.warnings = warnings
        self.report = Self.render(
            name: name, isZip: manifest != nil, checks: checks, problems: problems, warnings: warnings
        )
    }

    /// Exactly one of softdevice, bootloader, softdevice_bootloader, optionally plus
    /// application; or application alone.
    static func checkCombination(_ kinds: [DFUPackagePart.Kind], prefix: String) -> [String] {
        guard !kinds.isEmpty else {
            return ["\(prefix)manifest.json lists no firmware (expected application, bootloader, softdevice or softdevice_bootloader)"]
        }
        let system = kinds.filter { $0 != .application }
        guard system.count <= 1 else {
            let listed = system.map(\.rawValue).joined(separator: " + ")
            return [
                "\(prefix)manifest.json: \(listed) cannot be combined; a package holds one of softdevice, bootloader or softdevice_bootloader, optionally with application"
            ]
        }
        return []
    }

    // MARK: - Report

    static func render(
        name: String,
        isZip: Bool,
        checks: [PackagePartCheck],
        problems: [String],
        warnings: [String]
    ) -> String {
        let what = isZip ? "Nordic DFU package" : "Nordic DFU image and init packet"
        let count = checks.count == 1 ? "1 part" : "\(checks.count) parts"
        let verdict = problems.isEmpty ? "consistent" : "NOT consistent (\(problems.count) problem\(problems.count == 1 ? "" : "s"))"
        var lines = ["\(name): \(what), \(count), \(verdict)"]
        for (index, check) in checks.enumerated() {
            lines.append("  part \(index + 1) of \(checks.count): \(check.part.kind)")
            for (label, value) in check.details {
                let padded = (label + ":").padding(toLength: 17, withPad: " ", startingAt: 0)
                lines.append("    \(padded)\(value)")
            }
        }
        if !problems.isEmpty {
            lines.append("  problems:")
            lines += problems.map { "    - \($0)" }
        }
        if !warnings.isEmpty {
            lines.append("  warnings:")
            lines += warnings.map { "    - \($0)" }
        }
        return lines.joined(separator: "\n")
    }
}

// MARK: - Checks of one part

/// The checks of one part against its init packet, with the lines that describe it.
struct PackagePartCheck {
    let part: DFUPackagePart
    private(set) var problems: [String] = []
    private(set) var warnings: [String] = []
    /// (label, value) lines for the report.
    private(set) var details: [(String, String)] = []

    init(_ part: DFUPackagePart, prefix: String, fromManifest: Bool) {
        self.part = part
        let packet = part.initPacket
        let bin = part.binFile
        let dat = "\(prefix)\(part.datFile)"

        details.append(("image", "\(bin), \(part.image.count) bytes, CRC-32 \(Hex.number(part.image.crc32, digits: 8))"))
        details.append(("image SHA-256", Hex.bytes(part.imageSHA256)))
        var packetLine = "\(part.datFile), \(packet.rawBytes.count) bytes, "
        if let signature = packet.signature {
            packetLine += "signed (\(signature.type), \(signature.bytes.count)-byte signature)"
        } else {
            packetLine += "unsigned"
        }
        details.append(("init packet", packetLine))
        details.append(("op_code", packet.opCode.map(\.description) ?? "missing"))

        checkPacket(packet, dat: dat)
        guard let command = packet.command else {
            problems.append("\(dat): the command has no init (InitCommand), so there is nothing to check the image against")
            return
        }
        checkCommand(command, dat: dat, bin: bin, prefix: prefix, fromManifest: fromManifest)
    }

    private mutating func checkPacket(_ packet: InitPacket, dat: String) {
        if packet.opCode != .initialize {
            let found = packet.opCode.map { "is \($0)" } ?? "is missing"
            problems.append("\(dat): op_code \(found), expected INIT")
        }
        if let signature = packet.signature {
            switch signature.type {
            case .ecdsaP256SHA256 where signature.bytes.count != 64:
                problems.append("\(dat): signature is \(signature.bytes.count) bytes, ECDSA P-256 needs 64")
            case .ecdsaP256SHA256, .ed25519:
                break
            default:
                problems.append("\(dat): signature_type is \(signature.type)")
            }
        }
        if packet.rawBytes.count > DFUPackageInspection.bootloaderInitPacketLimit {
            warnings.append(
                "\(dat): init packet is \(packet.rawBytes.count) bytes; SDK 15.3 bootloaders accept at most \(DFUPackageInspection.bootloaderInitPacketLimit)")
        }
    }

    private mutating func checkCommand(
        _ command: InitCommand,
        dat: String,
        bin: String,
        prefix: String,
        fromManifest: Bool
    ) {
        let kind = part.kind
        let packet = part.initPacket

        // Type.
        if let type = command.type {
            details.append(("type", type.description))
            if !kind.acceptedTypes.contains(type) {
                problems.append("\(dat): type is \(type) but manifest.json lists it as \(kind)")
            }
            if type == .externalApplication || kind != .application, !packet.isSigned {
                warnings.append("\(dat): not signed; Secure DFU bootloaders require a signature for \(type) updates")
            }
        } else {
            details.append(("type", "missing"))
            problems.append("\(dat): type is missing")
        }

        // Versions and requirements.
        details.append(("fw_version", command.fwVersion.map(versionString) ?? "missing"))
        details.append(("hw_version", command.hwVersion.map(versionString) ?? "missing"))
        details.append(("sd_req", command.sdReq.isEmpty ? "none" : command.sdReq.map(sdReqString).joined(separator: ", ")))
        if command.fwVersion == nil {
            warnings.append("\(dat): fw_version is missing; bootloaders with version checks will refuse the update")
        }
        if command.hwVersion == nil, command.isDebug != true {
            warnings.append("\(dat): hw_version is missing; bootloaders refuse packets without it")
        }
        if command.sdReq.isEmpty {
            warnings.append("\(dat): sd_req is empty; bootloaders refuse packets without it")
        }
        if command.isDebug == true {
            warnings.append("\(dat): is_debug is set; only a debug bootloader accepts it")
        }

        checkSizes(command, dat: dat, bin: bin, prefix: prefix, fromManifest: fromManifest)
        checkHash(command.hash, dat: dat, bin: bin)

        // Boot validation.
        let validations = command.bootValidations.map { validation in
            validation.bytes.isEmpty ? "\(validation.type)" : "\(validation.type) (\(validation.bytes.count) bytes)"
        }
        details.append(("boot validation", validations.isEmpty ? "none" : validations.joined(separator: ", ")))
        for validation in command.bootValidations {
            switch validation.type {
            case .ecdsaP256SHA256 where validation.bytes.count != 64:
                problems.append("\(dat): boot_validation VALIDATE_ECDSA_P256_SHA256 has \(validation.bytes.count) bytes, a signature needs 64")
            case .none, .generatedCRC, .sha256, .ecdsaP256SHA256:
                break
            default:
                problems.append("\(dat): boot_validation type is \(validation.type)")
            }
        }
        details.append(("is_debug", command.isDebug.map { $0 ? "true" : "false" } ?? "not set"))
    }

    /// The size field(s) the kind needs must add up to the image size.
    private mutating func checkSizes(
        _ command: InitCommand,
        dat: String,
        bin: String,
        prefix: String,
        fromManifest: Bool
    ) {
        let actual = part.image.count
        func single(_ field: String, _ value: UInt32?) -> (String, String?) {
            guard let value, value > 0 else {
                return ("\(field) missing", "\(dat): \(field) is missing (required for \(part.kind))")
            }
            if Int(value) != actual {
                return ("\(field) \(value) bytes (MISMATCH: \(bin) has \(actual))", "\(dat): \(field) is \(value) but \(bin) has \(actual) bytes")
            }
            return ("\(field) \(value) bytes (matches \(bin))", nil)
        }
        let line: String
        let problem: String?
        switch part.kind {
        case .application: (line, problem) = single("app_size", command.appSize)
        case .softdevice: (line, problem) = single("sd_size", command.sdSize)
        case .bootloader: (line, problem) = single("bl_size", command.blSize)
        case .softdeviceBootloader:
            if let sd = command.sdSize, sd > 0, let bl = command.blSize, bl > 0 {
                let sum = Int(sd) + Int(bl)
                if sum == actual {
                    (line, problem) = ("sd_size \(sd) + bl_size \(bl) = \(sum) bytes (matches \(bin))", nil)
                } else {
                    (line, problem) = (
                        "sd_size \(sd) + bl_size \(bl) = \(sum) bytes (MISMATCH: \(bin) has \(actual))",
                        "\(dat): sd_size \(sd) + bl_size \(bl) = \(sum) but \(bin) has \(actual) bytes"
                    )
                }
            } else {
                let missing = [("sd_size", command.sdSize), ("bl_size", command.blSize)]
                    .filter { $0.1 == nil || $0.1 == 0 }.map(\.0).joined(separator: " and ")
                (line, problem) = ("\(missing) missing", "\(dat): \(missing) missing (required for softdevice_bootloader)")
            }
        }
        details.append(("sizes", line))
        if let problem { problems.append(problem) }

        // The manifest's informative sizes must not contradict the init packet.
        guard fromManifest else { return }
        for (field, stated, packet) in [
            ("sd_size", part.manifestSDSize, command.sdSize), ("bl_size", part.manifestBLSize, command.blSize),
        ] {
            guard let stated else { continue }
            let inPacket = Int(packet ?? 0)
            if stated != inPacket {
                problems.append("\(prefix)manifest.json: \(part.kind) \(field) is \(stated) but \(part.datFile) says \(inPacket)")
            }
        }
    }

    /// The hash must be SHA-256 and equal the image's SHA-256 byte-reversed.
    private mutating func checkHash(_ hash: InitCommand.Hash?, dat: String, bin: String) {
        guard let hash else {
            details.append(("hash", "missing"))
            problems.append("\(dat): hash is missing")
            return
        }
        let stored = [UInt8](hash.bytes)
        let expected = Array(part.imageSHA256.reversed())
        let verdict: String
        if hash.type != .sha256 {
            verdict = "(not checked)"
            problems.append("\(dat): hash_type is \(hash.type); Secure DFU bootloaders need SHA256")
        } else if stored == expected {
            verdict = "(byte-reversed SHA-256 of \(bin): matches)"
        } else if stored == part.imageSHA256 {
            verdict = "(MISMATCH: not byte-reversed)"
            problems.append("\(dat): hash is the SHA-256 of \(bin) in big-endian order; bootloaders expect it byte-reversed")
        } else if stored.count != SHA256.digestByteCount {
            verdict = "(MISMATCH)"
            problems.append("\(dat): hash is \(stored.count) bytes; a SHA-256 has 32")
        } else {
            verdict = "(MISMATCH)"
            problems.append(
                "\(dat): hash does not match \(bin) (init packet has \(Hex.bytes(stored)), byte-reversed SHA-256 of \(bin) is \(Hex.bytes(expected)))")
        }
        details.append(("hash", "\(hash.type) \(Hex.bytes(stored)) \(verdict)"))
    }
}

/// "3", or "0xFFFFFFFF (4294967295)" for the "any" default and other large values.
private func versionString(_ value: UInt32) -> String {
    value < 0x10000 ? "\(value)" : "\(value) (\(Hex.number(value)))"
}

/// "0x0101", or with the meaning of the special values.
private func sdReqString(_ value: UInt32) -> String {
    let text = Hex.number(value, digits: 4)
    switch value {
    case 0x0000: return text + " (no SoftDevice)"
    case 0xFFFE: return text + " (any)"
    default: return text
    }
}
