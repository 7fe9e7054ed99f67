#if os(Linux)

// The one file that calls libdbus, in the manner of swift-system's Syscalls.swift: thin wrappers
// that speak Swift types (String, Bool, OpaquePointer handles, DBusError), so that every other file
// is plain Swift and the C surface can be read, traced or faked in one place.
//
// Handles are `OpaquePointer`s to libdbus objects (DBusConnection*, DBusMessage*,
// DBusPendingCall*, DBusWatch*, DBusTimeout*). `openBus`, `newMessage`, `demarshal`,
// `sendWithReply` and `stealReply` return a reference the caller owns and gives back with
// `closeAndRelease` or `release`.
//
// libdbus treats invalid arguments (a malformed path, a NUL in a string) as programming errors and
// aborts the process, so callers validate with the `isValid…` functions first.
//
// libdbus itself is loaded at run time (LibDBus.swift, beside this file): `openBus` is the door,
// throwing ``DBusLibraryUnavailable`` when `libdbus-1.so.3` cannot be loaded; everything else runs
// once a connection exists (or in tests, where the library is present).

/// The loaded libdbus.
private var libdbus: LibDBus { LibDBus.loaded }

/// Thin wrappers over the libdbus C API.
enum DBusCalls {
    /// `DBUS_TIMEOUT_INFINITE`.
    static let infiniteTimeout: Int32 = LibDBus.timeoutInfinite

    // MARK: - Errors

    /// Runs `body` with an initialized C error and throws it as a ``DBusError`` if `body` set it.
    private static func withCError<Result>(
        _ body: (UnsafeMutablePointer<LibDBus.Error>) -> Result
    ) throws -> Result {
        var error = LibDBus.Error()
        libdbus.dbus_error_init(&error)
        defer { libdbus.dbus_error_free(&error) }
        let result = body(&error)
        if libdbus.dbus_error_is_set(&error) != 0 {
            throw DBusError(
                name: DBusError.Name(
                    rawValue: error.name.map { String(cString: $0) } ?? DBusError.Name.failed.rawValue
                ),
                message: error.message.map { String(cString: $0) } ?? ""
            )
        }
        return result
    }

    // MARK: - Connections

    /// Opens a private connection to the system or session bus and registers on it (`Hello`).
    ///
    /// Blocks while connecting; call it off Swift's cooperative pool.
    static func openBus(system: Bool) throws -> OpaquePointer {
        _ = try LibDBus.require()
        let connection = try withCError { libdbus.dbus_bus_get_private(system ? LibDBus.busSystem : LibDBus.busSession, $0) }
        guard let connection else { throw DBusError(name: .failed, message: "could not connect to the bus") }
        libdbus.dbus_connection_set_exit_on_disconnect(connection, 0)
        return connection
    }

    /// Opens a private connection to a bus at `address` and registers on it (`Hello`).
    ///
    /// Blocks while connecting; call it off Swift's cooperative pool.
    static func openBus(address: String) throws -> OpaquePointer {
        _ = try LibDBus.require()
        let connection = try withCError { libdbus.dbus_connection_open_private(address, $0) }
        guard let connection else { throw DBusError(name: .failed, message: "could not connect to \(address)") }
        libdbus.dbus_connection_set_exit_on_disconnect(connection, 0)
        do {
            _ = try withCError { libdbus.dbus_bus_register(connection, $0) }
        } catch {
            closeAndRelease(connection)
            throw error
        }
        return connection
    }

    /// The unique name (`:1.42`) the bus gave the connection.
    static func uniqueName(_ connection: OpaquePointer) -> String {
        libdbus.dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
    }

    /// Whether the connection can carry Unix file descriptors (`h`).
    static func canPassFileDescriptors(_ connection: OpaquePointer) -> Bool {
        libdbus.dbus_connection_can_send_type(connection, Int32(DBusType.unixFD.code)) != 0
    }

    /// Closes a private connection and releases the caller's reference.
    static func closeAndRelease(_ connection: OpaquePointer) {
        libdbus.dbus_connection_close(connection)
        libdbus.dbus_connection_unref(connection)
    }

    /// Queues a message for sending; returns its serial, or `nil` when out of memory.
    static func send(_ connection: OpaquePointer, _ message: OpaquePointer) -> UInt32? {
        var serial: UInt32 = 0
        return libdbus.dbus_connection_send(connection, message, &serial) != 0 ? serial : nil
    }

    /// Sends a method call and returns the pending call (a reference the caller owns), or `nil`
    /// when the connection is down or out of memory.
    static func sendWithReply(
        _ connection: OpaquePointer,
        _ message: OpaquePointer,
        timeoutMilliseconds: Int32
    ) -> OpaquePointer? {
        var pending: OpaquePointer?
        guard libdbus.dbus_connection_send_with_reply(connection, message, &pending, timeoutMilliseconds) != 0 else {
            return nil
        }
        return pending
    }

    /// Dispatches one incoming message; returns `true` while more remain.
    static func dispatch(_ connection: OpaquePointer) -> Bool {
        libdbus.dbus_connection_dispatch(connection) == LibDBus.dispatchDataRemains
    }

    /// Installs `loop` as the connection's main loop: its watches, timeouts, dispatch-status
    /// callback and message filter. libdbus holds a reference to `loop` until
    /// ``uninstall(_:)``.
    static func install(_ loop: DBusEventLoop) -> Bool {
        let connection = loop.connection
        func retained() -> UnsafeMutableRawPointer { Unmanaged.passRetained(loop).toOpaque() }
        guard
            libdbus.dbus_connection_add_filter(connection, filterFunction, retained(), releaseLoop) != 0,
            libdbus.dbus_connection_set_watch_functions(
                connection,
                { watch, data in DBusEventLoop.from(data).addWatch(watch!) ? 1 : 0 },
                { watch, data in DBusEventLoop.from(data).removeWatch(watch!) },
                { watch, data in DBusEventLoop.from(data).updateWatch(watch!) },
                retained(),
                releaseLoop
            ) != 0,
            libdbus.dbus_connection_set_timeout_functions(
                connection,
                { timeout, data in DBusEventLoop.from(data).addTimeout(timeout!) ? 1 : 0 },
                { timeout, data in DBusEventLoop.from(data).removeTimeout(timeout!) },
                { timeout, data in DBusEventLoop.from(data).updateTimeout(timeout!) },
                retained(),
                releaseLoop
            ) != 0
        else { return false }
        libdbus.dbus_connection_set_dispatch_status_function(
            connection,
            { _, status, data in
                if status == LibDBus.dispatchDataRemains { DBusEventLoop.from(data).scheduleDispatch() }
            },
            retained(),
            releaseLoop
        )
        return true
    }

    /// Removes everything ``install(_:)`` registered, releasing libdbus's references to `loop`.
    static func uninstall(_ loop: DBusEventLoop) {
        let connection = loop.connection
        libdbus.dbus_connection_remove_filter(connection, filterFunction, Unmanaged.passUnretained(loop).toOpaque())
        libdbus.dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
        _ = libdbus.dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        _ = libdbus.dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
    }

    private static let filterFunction: LibDBus.HandleMessageFunction = { _, message, data in
        DBusEventLoop.from(data).handle(message!) ? LibDBus.handlerResultHandled : LibDBus.handlerResultNotYetHandled
    }

    private static let releaseLoop: LibDBus.FreeFunction = { data in
        Unmanaged<DBusEventLoop>.fromOpaque(data!).release()
    }

    // MARK: - Watches and timeouts

    /// The file descriptor a watch monitors.
    static func watchDescriptor(_ watch: OpaquePointer) -> Int32 { libdbus.dbus_watch_get_unix_fd(watch) }

    /// Whether the watch is enabled, and for which conditions.
    static func watchInterest(_ watch: OpaquePointer) -> (enabled: Bool, readable: Bool, writable: Bool) {
        let flags = libdbus.dbus_watch_get_flags(watch)
        return (
            libdbus.dbus_watch_get_enabled(watch) != 0,
            flags & LibDBus.watchReadable != 0,
            flags & LibDBus.watchWritable != 0
        )
    }

    /// Tells libdbus that the watch's descriptor is readable or writable.
    static func handleWatch(_ watch: OpaquePointer, readable: Bool) {
        _ = libdbus.dbus_watch_handle(watch, readable ? LibDBus.watchReadable : LibDBus.watchWritable)
    }

    /// The timeout's interval in milliseconds, or `nil` when it is disabled.
    static func timeoutInterval(_ timeout: OpaquePointer) -> Int32? {
        libdbus.dbus_timeout_get_enabled(timeout) != 0 ? libdbus.dbus_timeout_get_interval(timeout) : nil
    }

    /// Tells libdbus that the timeout's interval elapsed.
    static func handleTimeout(_ timeout: OpaquePointer) { _ = libdbus.dbus_timeout_handle(timeout) }

    // MARK: - Pending calls

    /// Calls `reply.complete()` on the dispatching thread when the pending call completes; libdbus
    /// holds a reference to `reply` until the pending call is freed.
    static func setNotify(_ pending: OpaquePointer, _ reply: DBusPendingReply) -> Bool {
        libdbus.dbus_pending_call_set_notify(
            pending,
            { _, data in Unmanaged<DBusPendingReply>.fromOpaque(data!).takeUnretainedValue().complete() },
            Unmanaged.passRetained(reply).toOpaque(),
            { data in Unmanaged<DBusPendingReply>.fromOpaque(data!).release() }
        ) != 0
    }

    /// Takes the reply of a completed pending call (a reference the caller owns).
    static func stealReply(_ pending: OpaquePointer) -> OpaquePointer? { libdbus.dbus_pending_call_steal_reply(pending) }

    /// Stops waiting for a reply; the notification will not be called.
    static func cancel(_ pending: OpaquePointer) { libdbus.dbus_pending_call_cancel(pending) }

    /// Releases the caller's reference to a pending call.
    static func release(pending: OpaquePointer) { libdbus.dbus_pending_call_unref(pending) }

    // MARK: - Messages

    /// Creates an empty message of a type (1 call, 2 return, 3 error, 4 signal).
    static func newMessage(type: Int32) -> OpaquePointer? { libdbus.dbus_message_new(type) }

    /// Releases a reference to a message.
    static func release(message: OpaquePointer) { libdbus.dbus_message_unref(message) }

    /// The message's type (1 call, 2 return, 3 error, 4 signal).
    static func type(_ message: OpaquePointer) -> Int32 { libdbus.dbus_message_get_type(message) }

    /// A header field of a message.
    enum Field { case path, interface, member, errorName, destination, sender }

    /// Reads a header field.
    static func field(_ field: Field, of message: OpaquePointer) -> String? {
        let value: UnsafePointer<CChar>? =
            switch field {
            case .path: libdbus.dbus_message_get_path(message)
            case .interface: libdbus.dbus_message_get_interface(message)
            case .member: libdbus.dbus_message_get_member(message)
            case .errorName: libdbus.dbus_message_get_error_name(message)
            case .destination: libdbus.dbus_message_get_destination(message)
            case .sender: libdbus.dbus_message_get_sender(message)
            }
        return value.map { String(cString: $0) }
    }

    /// Sets a header field (validated by the caller); returns `false` when out of memory.
    static func setField(_ field: Field, of message: OpaquePointer, to value: String) -> Bool {
        switch field {
        case .path: libdbus.dbus_message_set_path(message, value) != 0
        case .interface: libdbus.dbus_message_set_interface(message, value) != 0
        case .member: libdbus.dbus_message_set_member(message, value) != 0
        case .errorName: libdbus.dbus_message_set_error_name(message, value) != 0
        case .destination: libdbus.dbus_message_set_destination(message, value) != 0
        case .sender: libdbus.dbus_message_set_sender(message, value) != 0
        }
    }

    /// The message's serial, 0 until it is sent.
    static func serial(_ message: OpaquePointer) -> UInt32 { libdbus.dbus_message_get_serial(message) }

    /// Sets the serial (only for marshalling a message that is not sent).
    static func setSerial(_ message: OpaquePointer, _ serial: UInt32) { libdbus.dbus_message_set_serial(message, serial) }

    /// The serial of the call a reply answers, 0 if none.
    static func replySerial(_ message: OpaquePointer) -> UInt32 { libdbus.dbus_message_get_reply_serial(message) }

    /// Sets the serial of the call a reply answers; returns `false` when out of memory.
    static func setReplySerial(_ message: OpaquePointer, _ serial: UInt32) -> Bool {
        libdbus.dbus_message_set_reply_serial(message, serial) != 0
    }

    /// Whether the sender expects no reply.
    static func noReply(_ message: OpaquePointer) -> Bool { libdbus.dbus_message_get_no_reply(message) != 0 }

    /// Marks the message as expecting no reply.
    static func setNoReply(_ message: OpaquePointer, _ noReply: Bool) {
        libdbus.dbus_message_set_no_reply(message, noReply ? 1 : 0)
    }

    /// Serializes a message to its wire bytes (Unix file descriptors are not carried).
    static func marshal(_ message: OpaquePointer) -> [UInt8]? {
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard libdbus.dbus_message_marshal(message, &buffer, &length) != 0, let buffer else { return nil }
        defer { libdbus.dbus_free(buffer) }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
            Array(UnsafeBufferPointer(start: $0, count: Int(length)))
        }
    }

    /// Parses and validates wire bytes into a message (a reference the caller owns).
    static func demarshal(_ bytes: [UInt8]) throws -> OpaquePointer {
        let message = try bytes.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { chars in
                try withCError { libdbus.dbus_message_demarshal(chars.baseAddress, Int32(chars.count), $0) }
            }
        }
        guard let message else { throw DBusError(name: .invalidArgs, message: "not a D-Bus message") }
        return message
    }

    // MARK: - Validation

    /// Whether `path` is a valid object path.
    static func isValidPath(_ path: String) -> Bool { libdbus.dbus_validate_path(path, nil) != 0 }

    /// Whether `name` is a valid interface name.
    static func isValidInterface(_ name: String) -> Bool { libdbus.dbus_validate_interface(name, nil) != 0 }

    /// Whether `name` is a valid member (method or signal) name.
    static func isValidMember(_ name: String) -> Bool { libdbus.dbus_validate_member(name, nil) != 0 }

    /// Whether `name` is a valid error name.
    static func isValidErrorName(_ name: String) -> Bool { libdbus.dbus_validate_error_name(name, nil) != 0 }

    /// Whether `name` is a valid unique or well-known bus name.
    static func isValidBusName(_ name: String) -> Bool { libdbus.dbus_validate_bus_name(name, nil) != 0 }

    /// Whether `string` is valid D-Bus UTF-8 (this also rejects embedded NULs).
    static func isValidUTF8(_ string: String) -> Bool {
        !string.utf8.contains(0) && libdbus.dbus_validate_utf8(string, nil) != 0
    }

    /// Whether `signature` is a valid signature, of any number of complete types.
    static func isValidSignature(_ signature: String) -> Bool {
        !signature.utf8.contains(0) && libdbus.dbus_signature_validate(signature, nil) != 0
    }

    /// Whether `signature` is one valid complete type.
    static func isValidSingleType(_ signature: String) -> Bool {
        !signature.utf8.contains(0) && libdbus.dbus_signature_validate_single(signature, nil) != 0
    }
}

// MARK: - Argument iterators

/// Appends arguments to a message: a wrapper over a writing `DBusMessageIter`.
///
/// A container opened with ``openContainer(_:signature:)`` must be given back to
/// ``close(_:)`` or ``abandon(_:)`` on the iterator that opened it.
struct DBusArgumentWriter {
    private var iterator = LibDBus.MessageIter()

    /// Starts appending after the message's existing arguments.
    init(appendingTo message: OpaquePointer) {
        libdbus.dbus_message_iter_init_append(message, &iterator)
    }

    private init() {}

    private static let outOfMemory = DBusError(name: .noMemory, message: "out of memory while building a message")

    /// Appends a fixed-size basic value (`y b n q i u x t d h`): `value` must have the C layout of
    /// the type (`UInt32` for booleans, `Int32` for Unix file descriptors).
    mutating func appendFixed<Value>(_ value: Value, code: UInt8) throws {
        let appended = withUnsafePointer(to: value) { libdbus.dbus_message_iter_append_basic(&iterator, Int32(code), $0) }
        guard appended != 0 else { throw Self.outOfMemory }
    }

    /// Appends a string-like value (`s o g`), already validated.
    mutating func appendString(_ value: String, code: UInt8) throws {
        let appended = value.withCString { pointer in
            withUnsafePointer(to: pointer) { libdbus.dbus_message_iter_append_basic(&iterator, Int32(code), $0) }
        }
        guard appended != 0 else { throw Self.outOfMemory }
    }

    /// Appends the elements of an `ay` array in one copy; the writer must be inside that array.
    mutating func appendBytes(_ bytes: [UInt8]) throws {
        let appended = bytes.withUnsafeBufferPointer { buffer in
            withUnsafePointer(to: buffer.baseAddress) {
                libdbus.dbus_message_iter_append_fixed_array(&iterator, Int32(DBusType.byte.code), $0, Int32(buffer.count))
            }
        }
        guard appended != 0 else { throw Self.outOfMemory }
    }

    /// Opens a container: `a` and `v` take the contained signature, `r` and `e` take `nil`.
    mutating func openContainer(_ code: UInt8, signature: String?) throws -> DBusArgumentWriter {
        var child = DBusArgumentWriter()
        let opened =
            if let signature {
                libdbus.dbus_message_iter_open_container(&iterator, Int32(code), signature, &child.iterator)
            } else {
                libdbus.dbus_message_iter_open_container(&iterator, Int32(code), nil, &child.iterator)
            }
        guard opened != 0 else { throw Self.outOfMemory }
        return child
    }

    /// Closes a container opened by this writer.
    mutating func close(_ child: inout DBusArgumentWriter) throws {
        guard libdbus.dbus_message_iter_close_container(&iterator, &child.iterator) != 0 else { throw Self.outOfMemory }
    }

    /// Gives up on a container opened by this writer after a failure, freeing what it holds.
    mutating func abandon(_ child: inout DBusArgumentWriter) {
        libdbus.dbus_message_iter_abandon_container_if_open(&iterator, &child.iterator)
    }
}

/// Reads the arguments of a message: a wrapper over a reading `DBusMessageIter`.
struct DBusArgumentReader {
    private var iterator = LibDBus.MessageIter()
    private var isEmpty = false

    /// Starts at the message's first argument.
    init(reading message: OpaquePointer) {
        isEmpty = libdbus.dbus_message_iter_init(message, &iterator) == 0
    }

    private init() {}

    /// The type code of the current argument, or 0 past the end.
    var currentCode: UInt8 {
        var copy = iterator
        return isEmpty ? 0 : UInt8(truncatingIfNeeded: libdbus.dbus_message_iter_get_arg_type(&copy))
    }

    /// The full signature of the current argument.
    var currentSignature: String {
        var copy = iterator
        guard !isEmpty, let signature = libdbus.dbus_message_iter_get_signature(&copy) else { return "" }
        defer { libdbus.dbus_free(signature) }
        return String(cString: signature)
    }

    /// Moves to the next argument.
    mutating func advance() {
        if !isEmpty { _ = libdbus.dbus_message_iter_next(&iterator) }
    }

    /// A reader over the contents of the current container argument.
    func contents() -> DBusArgumentReader {
        var copy = iterator
        var child = DBusArgumentReader()
        libdbus.dbus_message_iter_recurse(&copy, &child.iterator)
        return child
    }

    /// Reads a fixed-size basic value; `Value` must have the C layout of the current type.
    func readFixed<Value>(as type: Value.Type) -> Value {
        var copy = iterator
        var value = LibDBus.BasicValue()
        libdbus.dbus_message_iter_get_basic(&copy, &value)
        return withUnsafeBytes(of: &value) { $0.loadUnaligned(as: Value.self) }
    }

    /// Reads a string-like value (`s o g`).
    func readString() -> String {
        var copy = iterator
        var pointer: UnsafePointer<CChar>?
        libdbus.dbus_message_iter_get_basic(&copy, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// Reads all the bytes of an `ay` array; the reader must be inside that array.
    func readBytes() -> [UInt8] {
        var copy = iterator
        var pointer: UnsafeRawPointer?
        var count: Int32 = 0
        libdbus.dbus_message_iter_get_fixed_array(&copy, &pointer, &count)
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }
}
#endif
