import OTACore

/// A small JSON value with deterministic (sorted-key) serialization.
enum JSONValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])

    var serialized: String {
        switch self {
        case .string(let text):
            return JSONString.quoted(text)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return String(value)
        case .bool(let value):
            return value ? "true" : "false"
        case .array(let values):
            return "[" + values.map(\.serialized).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.keys.sorted().map { JSONString.quoted($0) + ":" + members[$0]!.serialized }.joined(separator: ",") + "}"
        }
    }
}
