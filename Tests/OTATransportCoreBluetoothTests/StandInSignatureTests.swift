// These tests run the transport against the stand-in, which only exists where CoreBluetooth
// does not (Linux); on Apple platforms the transport talks to the real framework.
#if !canImport(CoreBluetooth)
import CoreBluetoothStandIn
import Foundation
import Testing

/// The stand-in against `corebluetooth-api.md` (a copy of `shared/protocols/corebluetooth-api.md`
/// beside this file), member for member: what the stand-in says it declares is what the document
/// writes, its sources declare it so, and nothing of section 8's list is missing.
@Suite struct StandInSignatureTests {
    static let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let document = (try? String(contentsOf: here.appendingPathComponent("corebluetooth-api.md"), encoding: .utf8)) ?? ""
    static let sources: String = {
        let root = here.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/CoreBluetoothStandIn/API")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return files.sorted().compactMap { try? String(contentsOf: root.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
    }()

    /// Collapses whitespace and writes `[String : Any]` as swift-format does.
    static func normalise(_ text: String) -> String {
        var text = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        text = text.replacingOccurrences(of: " : ", with: ": ").replacingOccurrences(of: "( ", with: "(").replacingOccurrences(of: " )", with: ")")
        return text.replacingOccurrences(of: ", )", with: ")")
    }

    /// The form a signature takes in the stand-in's source, modifiers aside.
    static func sourceForm(_ signature: String) -> String {
        var form = normalise(signature)
        for modifier in ["optional ", "convenience ", "weak "] { form = form.replacingOccurrences(of: modifier, with: "") }
        for accessor in [" { get set }", " { get }"] { form = form.replacingOccurrences(of: accessor, with: "") }
        return form
    }

    static let normalisedSources: String = {
        var text = normalise(sources)
        for modifier in ["public ", "open ", "override ", "convenience ", "private(set) ", "weak "] {
            text = text.replacingOccurrences(of: modifier, with: "")
        }
        return text
    }()

    /// The backticked pieces of `text`.
    static func backticked(_ text: Substring) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    static func section(_ start: String, _ end: String) -> Substring {
        guard let from = document.range(of: start), let to = document.range(of: end, range: from.upperBound..<document.endIndex) else { return "" }
        return document[from.upperBound..<to.lowerBound]
    }

    @Test func theDocumentIsThere() {
        #expect(Self.document.contains("# CoreBluetooth central API"))
        #expect(Self.sources.contains("class CBCentralManager"))
    }

    @Test(arguments: CoreBluetoothStandInSurface.declarations)
    func eachDeclarationIsWrittenSoInTheDocument(_ declaration: CoreBluetoothStandInSurface.Declaration) {
        let document = Self.normalise(Self.document)
        #expect(document.contains(Self.normalise(declaration.signature)), "\(declaration.type).\(declaration.member)")
    }

    @Test(arguments: CoreBluetoothStandInSurface.declarations)
    func eachDeclarationIsDeclaredSoByTheStandIn(_ declaration: CoreBluetoothStandInSurface.Declaration) {
        let form = Self.sourceForm(declaration.signature)
        #expect(Self.normalisedSources.contains(form), "\(declaration.type): \(form)")
        #expect(Self.sources.range(of: "(class|protocol|struct|enum) \(declaration.type)\\b", options: .regularExpression) != nil)
    }

    @Test func everyMemberTheTransportUsesIsDeclared() {
        let list = Self.section("Members the transport uses", "Semantics to model")
        let tokens = Self.backticked(list)
        #expect(tokens.count == 29)
        let declarations = CoreBluetoothStandInSurface.declarations
        for token in tokens {
            if !token.contains("."), !token.contains("("), token.hasPrefix("CB") {
                // A type.
                #expect(Self.sources.range(of: "(class|protocol|struct|enum) \(token)\\b", options: .regularExpression) != nil, "type \(token)")
                continue
            }
            var type: String?
            var members = [token]
            if let dot = token.firstIndex(of: "."), token[..<dot].hasPrefix("CB") {
                type = String(token[..<dot])
                members = token[token.index(after: dot)...].split(separator: "/").map(String.init)
            }
            for member in members {
                let found = declarations.contains { declaration in
                    (declaration.member == member || declaration.member.contains(member))
                        && (type.map { $0 == declaration.type || ($0 == "CBPeripheral" && declaration.type == "CBPeer") } ?? true)
                }
                #expect(found, "\(type ?? "")\(type == nil ? "" : ".")\(member)")
            }
        }
    }

    @Test func everyCentralManagerDelegateMethodOfSectionTwoIsDeclared() {
        let table = Self.section("## 2. CBCentralManagerDelegate", "- State update:")
        let methods = Self.backticked(table).filter { $0.contains("func ") }
        #expect(methods.count == 9)
        let declared = Set(CoreBluetoothStandInSurface.declarations.map { Self.normalise($0.signature) })
        for method in methods { #expect(declared.contains(Self.normalise(method)), "\(method)") }
    }

    @Test func everyKeyIsDeclared() throws {
        // Keys that exist only on iOS (not macOS) and that no OTA transport uses.
        let iOSOnly: Set = [
            "CBCentralManagerOptionDeviceAccessForMedia", "CBConnectPeripheralOptionEnableTransportBridgingKey", "CBConnectPeripheralOptionRequiresANCS",
        ]
        let pattern = try NSRegularExpression(
            pattern: "\\bCB(CentralManager|ConnectPeripheral|AdvertisementData)\\w*(Key|Option\\w+|IsConnectable|EnableAutoReconnect)\\b")
        let document = Self.document
        let names = Set(
            pattern.matches(in: document, range: NSRange(document.startIndex..., in: document)).compactMap {
                Range($0.range, in: document).map { String(document[$0]) }
            })
        #expect(names.count >= 15)
        for name in names.subtracting(iOSOnly) {
            #expect(Self.sources.contains("public let \(name): String"), "\(name)")
        }
    }

    @Test func errorCodesHaveTheDocumentsNamesAndValues() {
        let table = Self.section("| `CBError.Code` | Raw |", "Raw values 0–16")
        var rows = 0
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let raw = Int(cells[1]) else { continue }
            let name = Self.backticked(Substring(cells[0])).first ?? ""
            #expect(CBError.Code(rawValue: raw).map { "\($0)" } == name, "CBError \(raw)")
            if cells.count >= 5, let attName = Self.backticked(Substring(cells[3])).first, let attRaw = Int(cells[4].dropFirst(2), radix: 16) {
                #expect(CBATTError.Code(rawValue: attRaw).map { "\($0)" } == attName, "CBATTError \(attRaw)")
            }
            rows += 1
        }
        #expect(rows == 19)
        #expect((CBError(.connectionTimeout) as NSError).domain == CBErrorDomain)
        #expect(CBError(.peripheralDisconnected).code == CBError.peripheralDisconnected)
        #expect((CBATTError(.writeNotPermitted) as NSError).code == 3)
    }
}
#endif
