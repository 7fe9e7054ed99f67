#if os(Linux)
/// Why ``BlueZPeripheral`` could not serve, or stopped serving.
public struct BlueZPeripheralError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for a person.
    public var description: String
    /// The D-Bus error behind it, if any.
    public var underlying: DBusError?

    /// Creates an error.
    public init(_ description: String, underlying: DBusError? = nil) {
        self.description = underlying.map { "\(description): \($0)" } ?? description
        self.underlying = underlying
    }

    /// Wraps what `body` throws, naming the step.
    static func step<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DBusError {
            throw BlueZPeripheralError(what, underlying: error)
        } catch let missing as DBusLibraryUnavailable {
            throw BlueZPeripheralError(missing.description)
        }
    }
}
#endif
