/// What a protocol found inside a firmware container, for `ota inspect`.
public struct FirmwareInspection: Sendable, Hashable {
    /// A multi-line, human-readable report of the contents.
    public var report: String
    /// Inconsistencies that would make an update fail; empty when the container is usable.
    public var problems: [String]

    /// Creates an inspection.
    public init(report: String, problems: [String]) {
        self.report = report
        self.problems = problems
    }
}
