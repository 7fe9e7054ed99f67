import Foundation

/// Reads a JSON manifest with errors that name the file and the field ("catalog.json:
/// families[1].protocol: expected a string"), and refuses unknown fields so typos are caught.
struct ManifestReader: Sendable {
    /// The file name used in messages.
    let source: String

    /// A JSON value with the path that led to it.
    struct Node: @unchecked Sendable {
        // @unchecked: wraps values produced by JSONSerialization (immutable Foundation types),
        // read only.
        let value: Any
        /// The path of this node ("families[1].match").
        let path: String
        let source: String

        func error(_ problem: String) -> OTAError {
            OTAError(.invalidManifest, "\(source): \(path.isEmpty ? "" : path + ": ")\(problem)")
        }

        private func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

        /// The member `key`, or `nil` when absent (or JSON null).
        func optional(_ key: String) throws(OTAError) -> Node? {
            guard let object = value as? [String: Any] else { throw error("expected an object") }
            guard let member = object[key], !(member is NSNull) else { return nil }
            return Node(value: member, path: child(key), source: source)
        }

        /// The member `key`.
        func required(_ key: String) throws(OTAError) -> Node {
            guard let node = try optional(key) else { throw OTAError(.invalidManifest, "\(source): \(child(key)): missing") }
            return node
        }

        /// Fails when the object has members other than `known`.
        func allowOnly(_ known: [String]) throws(OTAError) {
            guard let object = value as? [String: Any] else { throw error("expected an object") }
            if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
                throw OTAError(.invalidManifest, "\(source): \(child(unknown)): unknown field (known: \(known.joined(separator: ", ")))")
            }
        }

        /// The value as a string.
        func string() throws(OTAError) -> String {
            guard let text = value as? String else { throw error("expected a string") }
            return text
        }

        /// The value as a non-empty string.
        func nonEmptyString() throws(OTAError) -> String {
            let text = try string()
            guard !text.isEmpty else { throw error("must not be empty") }
            return text
        }

        /// The value as a boolean (`true` or `false`, not a number).
        func bool() throws(OTAError) -> Bool {
            guard let number = value as? NSNumber, Self.isBool(number) else { throw error("expected true or false") }
            return number.boolValue
        }

        /// The value as an integer in `range`.
        func integer(in range: ClosedRange<Int>) throws(OTAError) -> Int {
            guard let number = value as? NSNumber, !Self.isBool(number), let integer = Int(exactly: number.doubleValue), range.contains(integer) else {
                throw error("expected an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return integer
        }

        /// The longest time a manifest may give, in seconds: a year.
        static let maximumSeconds: Double = 31_536_000

        /// The value as a positive number of seconds, at most ``maximumSeconds`` (so that any
        /// number in the file, however large, NaN or infinite, is refused rather than overflowing).
        func seconds() throws(OTAError) -> Duration {
            guard let number = value as? NSNumber, !Self.isBool(number), number.doubleValue > 0, number.doubleValue <= Self.maximumSeconds else {
                throw error("expected a positive number of seconds, at most \(Int(Self.maximumSeconds)) (a year)")
            }
            return .milliseconds(Int64((number.doubleValue * 1000).rounded()))
        }

        /// The value as a list.
        func array() throws(OTAError) -> [Node] {
            guard let list = value as? [Any] else { throw error("expected a list") }
            return list.enumerated().map { Node(value: $1, path: "\(path)[\($0)]", source: source) }
        }

        /// The value as an object's members, sorted by key.
        func members() throws(OTAError) -> [(key: String, node: Node)] {
            guard let object = value as? [String: Any] else { throw error("expected an object") }
            return object.keys.sorted().map { ($0, Node(value: object[$0]!, path: child($0), source: source)) }
        }

        /// A scalar (string, number, boolean) as text, for protocol parameters.
        func scalarText() throws(OTAError) -> String {
            switch value {
            case let text as String: return text
            case let number as NSNumber where Self.isBool(number): return number.boolValue ? "true" : "false"
            case let number as NSNumber:
                if let integer = Int(exactly: number.doubleValue) { return String(integer) }
                return String(number.doubleValue)
            default: throw error("expected a string, number or boolean")
            }
        }

        /// The value as a Bluetooth UUID.
        func uuid() throws(OTAError) -> GATTUUID {
            let text = try string()
            guard let uuid = GATTUUID(text) else { throw error("'\(text)' is not a Bluetooth UUID") }
            return uuid
        }

        /// The value as hexadecimal bytes ("0102ab", optional "0x"): ASCII digits only, since
        /// `Character.isHexDigit` also accepts fullwidth ones.
        func hexBytes() throws(OTAError) -> Data {
            let text = try string()
            guard let bytes = Self.asciiHexBytes(text) else { throw error("'\(MessageText.name(text))' is not hexadecimal bytes") }
            return bytes
        }

        /// `text` ("0102ab", optional "0x") as bytes, or `nil` unless it is an even number of ASCII
        /// hexadecimal digits.
        static func asciiHexBytes(_ text: String) -> Data? {
            var digits = Array(text.utf8)
            if digits.count >= 2, digits[0] == UInt8(ascii: "0"), digits[1] | 0x20 == UInt8(ascii: "x") { digits.removeFirst(2) }
            return Hex.decode(digits: digits).map { Data($0) }
        }

        private static func isBool(_ number: NSNumber) -> Bool {
            // JSONSerialization gives true/false as a boolean NSNumber, whose type name says so.
            String(describing: type(of: number)).contains("Boolean")
        }
    }

    /// Creates a reader for messages that name `source`.
    init(source: String) { self.source = source }

    /// Parses `data` as JSON and returns its root object.
    func root(_ data: Data) throws(OTAError) -> Node {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data, options: [])
        } catch {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "not valid JSON"
            throw OTAError(.invalidManifest, "\(source): malformed JSON (\(reason))")
        }
        guard value is [String: Any] else { throw OTAError(.invalidManifest, "\(source): expected a JSON object at the top level") }
        return Node(value: value, path: "", source: source)
    }
}
