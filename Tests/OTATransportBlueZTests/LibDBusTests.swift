#if os(Linux)
import Foundation
import OTACore
import OTATestSupport
import Testing

@testable import OTATransportBlueZ

/// libdbus loaded at run time: what happens without it, and whether the module's own
/// declarations (LibDBus.swift) match the real header.
@Suite struct LibDBusTests {
    static let missingLine =
        "BlueZ needs libdbus (libdbus-nonexistent.so.3 not found: cannot open shared object file: No such file or directory); install libdbus-1-3"

    @Test func aMissingLibraryIsOneLineThatNamesThePackage() throws {
        guard case .failure(let missing) = LibDBus.load("libdbus-nonexistent.so.3") else {
            Issue.record("a library that does not exist loaded")
            return
        }
        #expect(missing.description == Self.missingLine)
        #expect(BlueZFailure.busUnreachable(.system, missing) == TransportError(.connectionFailed, Self.missingLine))
    }

    @Test func aLibraryWithoutTheFunctionsIsRefusedByName() throws {
        guard case .failure(let missing) = LibDBus.load("libc.so.6") else {
            Issue.record("libc passed for libdbus")
            return
        }
        #expect(missing.detail == "libc.so.6 has no dbus_error_init")
    }

    @Test func theInstalledLibraryLoads() throws {
        guard case .success = LibDBus.load(LibDBus.soname) else {
            try Test.cancel("libdbus-1.so.3 is not installed here")
        }
    }

    /// The `ota` tool, run with `OTA_LIBDBUS` naming a library that does not exist, prints one
    /// error line and exits non-zero; it does not crash.
    @Test func theToolSaysWhatToInstallAndExits() async throws {
        let tool = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("ota")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            try Test.cancel("the ota executable is not built next to the tests (\(tool.path))")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = tool
        process.currentDirectoryURL = root
        process.arguments = [
            "update", "Examples/firmware/sample-app.bin", "--protocol", "generic", "--device", "AA:BB:CC:DD:EE:FF",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["OTA_LIBDBUS": "libdbus-nonexistent.so.3"], uniquingKeysWith: { $1 })
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Read and waited for on a thread of its own, not one of the cooperative pool's two.
        let output = await offThePool { () -> String in
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }

        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus != 0)
        let errorLines = output.split(separator: "\n").filter { $0.hasPrefix("ota: error: ") }
        #expect(errorLines.count == 1)
        #expect(errorLines.first?.hasSuffix(Self.missingLine) == true, "\(output)")
    }

    /// Compiles a C program against the real `<dbus/dbus.h>` that prints the sizes, alignments,
    /// offsets and constants LibDBus.swift declares, and compares them with the Swift side; also
    /// checks that every function LibDBus.swift resolves is declared by the header.
    @Test func theDeclarationsMatchTheHeader() async throws {
        guard let cflags = await Self.run("/usr/bin/env", ["pkg-config", "--cflags", "dbus-1"]) else {
            try Test.cancel("no libdbus header here (pkg-config finds no dbus-1; install libdbus-1-dev to run this check)")
        }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/OTATransportBlueZ/DBus/LibDBus.swift")
        let swiftSource = try String(contentsOf: source, encoding: .utf8)
        let symbols = swiftSource.matches(of: /try resolve\("(\w+)"\)/).map { String($0.output.1) }
        #expect(symbols.count > 60)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ota-libdbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let program = Self.checkProgram(symbols: symbols)
        try program.write(to: directory.appendingPathComponent("check.c"), atomically: true, encoding: .utf8)
        let binary = directory.appendingPathComponent("check").path
        let flags = cflags.split(separator: " ").map(String.init)
        guard await Self.run("/usr/bin/env", ["cc"] + flags + [directory.appendingPathComponent("check.c").path, "-o", binary]) != nil,
            let printed = await Self.run(binary, [])
        else {
            Issue.record("the check program did not compile or run against the header:\n\(program)")
            return
        }
        let header = Dictionary(
            uniqueKeysWithValues: printed.split(separator: "\n").map { line in
                let parts = line.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts[1]))
            })
        #expect(header == Self.swiftSide)

        // Each function called with arguments of the types LibDBus.swift declares, and its result
        // stored in a variable of the declared type: a wrong argument count, a pointer where the
        // header has an integer (or the reverse) or an integer of the wrong width does not compile.
        let calls = Self.callCheck()
        try calls.write(to: directory.appendingPathComponent("calls.c"), atomically: true, encoding: .utf8)
        let compiled = await Self.run(
            "/usr/bin/env",
            ["cc", "-c", "-Werror", "-Wconversion", "-Wno-sign-conversion"] + flags
                + [directory.appendingPathComponent("calls.c").path, "-o", directory.appendingPathComponent("calls.o").path])
        #expect(compiled != nil, "the declared signatures do not match the header:\n\(calls)")
    }

    /// C that calls every resolved function as LibDBus.swift declares it.
    static func callCheck() -> String {
        let library = LibDBus.loaded
        var lines: [String] = []
        for child in Mirror(reflecting: library).children {
            guard let name = child.label, name.hasPrefix("dbus_") else { continue }
            let (parameters, result) = cSignature(String(describing: type(of: child.value)))
            let call = "\(name)(\(parameters.joined(separator: ", ")))"
            lines.append("    " + (result.map { "\($0) = \(call);" } ?? "\(call);"))
        }
        return """
            #include <dbus/dbus.h>
            void check(void);
            void check(void) {
                void *pointer = 0; unsigned int u32 = 0; int i32 = 0;
                const void *rp; unsigned int ru32; int ri32;
            \(lines.joined(separator: "\n"))
                (void)pointer; (void)u32; (void)i32; (void)rp; (void)ru32; (void)ri32;
            }

            """
    }

    /// A Swift `@convention(c)` type, as `type(of:)` prints it, as C arguments and a result variable.
    static func cSignature(_ swiftType: String) -> (parameters: [String], result: String?) {
        var text = Substring(swiftType)
        text = text.dropFirst("@convention(c) (".count)
        var depth = 0
        var parameters: [String] = []
        var current = ""
        var end = text.startIndex
        for index in text.indices {
            let character = text[index]
            let isArrow = character == ">" && index > text.startIndex && text[text.index(before: index)] == "-"
            if character == "(" || character == "<" { depth += 1 }
            if character == ")" || (character == ">" && !isArrow) {
                if depth == 0 {
                    end = index
                    break
                }
                depth -= 1
            }
            if character == ",", depth == 0 {
                parameters.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { parameters.append(current.trimmingCharacters(in: .whitespaces)) }
        let result = text[text.index(after: end)...].replacingOccurrences(of: " -> ", with: "")
        func argument(_ type: String) -> String {
            if type.contains("@convention") { return "0" }  // a callback: a null function pointer
            if type.contains("Pointer") { return "pointer" }
            switch type {
            case "UInt32": return "u32"
            case "Int32": return "i32"
            default: return "/* unmapped \(type) */"
            }
        }
        let variable: String? =
            switch result {
            case "()": nil
            case "UInt32": "ru32"
            case "Int32": "ri32"
            default: result.contains("Pointer") ? "rp" : "/* unmapped \(result) */"
            }
        return (parameters.map(argument), variable)
    }

    /// What LibDBus.swift declares, in the check program's words.
    static var swiftSide: [String: String] {
        typealias E = LibDBus.Error
        typealias I = LibDBus.MessageIter
        let values: [String: Int] = [
            "DBusError.size": MemoryLayout<E>.size,
            "DBusError.align": MemoryLayout<E>.alignment,
            "DBusError.name": MemoryLayout<E>.offset(of: \.name)!,
            "DBusError.message": MemoryLayout<E>.offset(of: \.message)!,
            "DBusError.padding1": MemoryLayout<E>.offset(of: \.padding1)!,
            "DBusMessageIter.size": MemoryLayout<I>.size,
            "DBusMessageIter.align": MemoryLayout<I>.alignment,
            "DBusMessageIter.dummy3": MemoryLayout<I>.offset(of: \.dummy3)!,
            "DBusMessageIter.pad1": MemoryLayout<I>.offset(of: \.pad1)!,
            "DBusMessageIter.pad2": MemoryLayout<I>.offset(of: \.pad2)!,
            "DBusMessageIter.pad3": MemoryLayout<I>.offset(of: \.pad3)!,
            "DBusBasicValue.size": MemoryLayout<LibDBus.BasicValue>.size,
            "DBusBasicValue.align": MemoryLayout<LibDBus.BasicValue>.alignment,
            "dbus_bool_t.size": MemoryLayout<LibDBus.Bool32>.size,
            "DBusBusType.size": MemoryLayout<UInt32>.size,
            "DBUS_BUS_SESSION": Int(LibDBus.busSession),
            "DBUS_BUS_SYSTEM": Int(LibDBus.busSystem),
            "DBUS_DISPATCH_DATA_REMAINS": Int(LibDBus.dispatchDataRemains),
            "DBUS_HANDLER_RESULT_HANDLED": Int(LibDBus.handlerResultHandled),
            "DBUS_HANDLER_RESULT_NOT_YET_HANDLED": Int(LibDBus.handlerResultNotYetHandled),
            "DBUS_WATCH_READABLE": Int(LibDBus.watchReadable),
            "DBUS_WATCH_WRITABLE": Int(LibDBus.watchWritable),
            "DBUS_TIMEOUT_INFINITE": Int(LibDBus.timeoutInfinite),
            "DBUS_MESSAGE_TYPE_METHOD_CALL": Int(DBusMessage.typeCodes[.methodCall]!),
            "DBUS_MESSAGE_TYPE_METHOD_RETURN": Int(DBusMessage.typeCodes[.methodReturn]!),
            "DBUS_MESSAGE_TYPE_ERROR": Int(DBusMessage.typeCodes[.error]!),
            "DBUS_MESSAGE_TYPE_SIGNAL": Int(DBusMessage.typeCodes[.signal]!),
            "DBUS_TYPE_BYTE": Int(DBusType.byte.code),
            "DBUS_TYPE_BOOLEAN": Int(DBusType.bool.code),
            "DBUS_TYPE_INT16": Int(DBusType.int16.code),
            "DBUS_TYPE_UINT16": Int(DBusType.uint16.code),
            "DBUS_TYPE_INT32": Int(DBusType.int32.code),
            "DBUS_TYPE_UINT32": Int(DBusType.uint32.code),
            "DBUS_TYPE_INT64": Int(DBusType.int64.code),
            "DBUS_TYPE_UINT64": Int(DBusType.uint64.code),
            "DBUS_TYPE_DOUBLE": Int(DBusType.double.code),
            "DBUS_TYPE_STRING": Int(DBusType.string.code),
            "DBUS_TYPE_OBJECT_PATH": Int(DBusType.objectPath.code),
            "DBUS_TYPE_SIGNATURE": Int(DBusType.signature.code),
            "DBUS_TYPE_UNIX_FD": Int(DBusType.unixFD.code),
            "DBUS_TYPE_VARIANT": Int(DBusType.variant.code),
            "DBUS_TYPE_ARRAY": Int(DBusType.array(.byte).code),
        ]
        return values.mapValues(String.init)
    }

    static func checkProgram(symbols: [String]) -> String {
        let printed = swiftSide.keys.sorted().map { key -> String in
            let parts = key.split(separator: ".")
            let expression =
                if parts.count == 1 { "(long)(\(key))" } else if parts[1] == "size" { "(long)sizeof(\(parts[0]))" } else if parts[1] == "align" {
                    "(long)_Alignof(\(parts[0]))"
                } else { "(long)offsetof(\(parts[0]), \(parts[1]))" }
            return "    printf(\"%s=%ld\\n\", \"\(key)\", \(expression));"
        }
        let declared = symbols.map { "    (void)sizeof(&\($0));" }
        return """
            #include <dbus/dbus.h>
            #include <stddef.h>
            #include <stdio.h>
            int main(void) {
            \((declared + printed).joined(separator: "\n"))
                return 0;
            }

            """
    }

    /// Runs a program; its standard output when it exits with 0, else `nil`.
    /// Runs a program on a thread of its own (`offThePool`): the compiler takes seconds, which
    /// would hold one of the cooperative pool's threads.
    static func run(_ path: String, _ arguments: [String]) async -> String? {
        await offThePool { blockingRun(path, arguments) }
    }

    private static func blockingRun(_ path: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
#endif
