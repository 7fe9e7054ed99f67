#if os(Linux)
import Glibc

// The project's own declarations of the part of the libdbus C API that DBusCalls.swift uses,
// resolved at run time with dlopen/dlsym, in the manner of Qt's QtDBus (qdbus_symbols.cpp) and
// SDL: the package builds without libdbus's headers or its unversioned `libdbus-1.so`, and only a
// BlueZ command needs `libdbus-1.so.3` when it runs. See
// docs/decisions/0009-libdbus-at-run-time.md.
//
// Every declaration here mirrors dbus-1.0/dbus/*.h of libdbus 1.x, whose ABI has been stable
// since 1.0 (soname libdbus-1.so.3). LibDBusHeaderTests compares the layouts and constants with
// the real header wherever the header is installed.
//
// This file only declares and loads; the calls themselves stay in DBusCalls.swift.

/// libdbus, loaded at run time: one C function pointer per libdbus function the module calls.
///
/// `@unchecked Sendable`: every stored property is an immutable C function pointer (Swift does not
/// infer `Sendable` for `@convention(c)` types); libdbus's own thread rules are kept by the callers
/// (decision 0006).
struct LibDBus: @unchecked Sendable {
    // MARK: - Types

    /// `DBusError`: two strings and private fields, filled by libdbus.
    struct Error {
        var name: UnsafePointer<CChar>? = nil
        var message: UnsafePointer<CChar>? = nil
        /// `unsigned int dummy1:1 … dummy5:1`, one `unsigned int` of bit-fields.
        var dummy: UInt32 = 0
        var padding1: UnsafeMutableRawPointer? = nil
    }

    /// `DBusMessageIter`: opaque to callers, allocated by them (on the stack).
    struct MessageIter {
        var dummy1: UnsafeMutableRawPointer? = nil
        var dummy2: UnsafeMutableRawPointer? = nil
        var dummy3: UInt32 = 0
        var dummy4: Int32 = 0
        var dummy5: Int32 = 0
        var dummy6: Int32 = 0
        var dummy7: Int32 = 0
        var dummy8: Int32 = 0
        var dummy9: Int32 = 0
        var dummy10: Int32 = 0
        var dummy11: Int32 = 0
        var pad1: Int32 = 0
        var pad2: UnsafeMutableRawPointer? = nil
        var pad3: UnsafeMutableRawPointer? = nil
    }

    /// Storage for `DBusBasicValue`, the 8-byte union `dbus_message_iter_get_basic` writes into.
    typealias BasicValue = UInt64

    /// `dbus_bool_t`.
    typealias Bool32 = UInt32

    /// A `DBusError*`: a Swift struct cannot appear in a `@convention(c)` type, so pointers to
    /// ``Error`` and ``MessageIter`` are passed untyped (`&error` converts implicitly).
    typealias ErrorPointer = UnsafeMutableRawPointer?
    /// A `DBusMessageIter*`.
    typealias IterPointer = UnsafeMutableRawPointer?

    // Handles: `DBusConnection*`, `DBusMessage*`, `DBusPendingCall*`, `DBusWatch*`, `DBusTimeout*`.
    typealias Handle = OpaquePointer

    typealias FreeFunction = @convention(c) (UnsafeMutableRawPointer?) -> Void
    typealias HandleMessageFunction = @convention(c) (Handle?, Handle?, UnsafeMutableRawPointer?) -> UInt32
    typealias AddFunction = @convention(c) (Handle?, UnsafeMutableRawPointer?) -> Bool32
    typealias RemoveFunction = @convention(c) (Handle?, UnsafeMutableRawPointer?) -> Void
    typealias DispatchStatusFunction = @convention(c) (Handle?, UInt32, UnsafeMutableRawPointer?) -> Void
    typealias PendingCallNotifyFunction = @convention(c) (Handle?, UnsafeMutableRawPointer?) -> Void

    // MARK: - Constants

    /// `DBusBusType`.
    static let busSession: UInt32 = 0
    static let busSystem: UInt32 = 1
    /// `DBusDispatchStatus`.
    static let dispatchDataRemains: UInt32 = 0
    /// `DBusHandlerResult`.
    static let handlerResultHandled: UInt32 = 0
    static let handlerResultNotYetHandled: UInt32 = 1
    /// `DBusWatchFlags`.
    static let watchReadable: UInt32 = 1
    static let watchWritable: UInt32 = 2
    /// `DBUS_TIMEOUT_INFINITE`.
    static let timeoutInfinite: Int32 = 0x7fff_ffff

    // MARK: - Functions

    typealias ValidateFunction = @convention(c) (UnsafePointer<CChar>?, ErrorPointer) -> Bool32
    typealias GetStringFunction = @convention(c) (Handle?) -> UnsafePointer<CChar>?
    typealias SetStringFunction = @convention(c) (Handle?, UnsafePointer<CChar>?) -> Bool32

    let dbus_error_init: @convention(c) (ErrorPointer) -> Void
    let dbus_error_free: @convention(c) (ErrorPointer) -> Void
    let dbus_error_is_set: @convention(c) (UnsafeRawPointer?) -> Bool32
    let dbus_free: @convention(c) (UnsafeMutableRawPointer?) -> Void

    let dbus_bus_get_private: @convention(c) (UInt32, ErrorPointer) -> Handle?
    let dbus_bus_register: @convention(c) (Handle?, ErrorPointer) -> Bool32
    let dbus_bus_get_unique_name: GetStringFunction
    let dbus_connection_open_private: @convention(c) (UnsafePointer<CChar>?, ErrorPointer) -> Handle?
    let dbus_connection_set_exit_on_disconnect: @convention(c) (Handle?, Bool32) -> Void
    let dbus_connection_can_send_type: @convention(c) (Handle?, Int32) -> Bool32
    let dbus_connection_close: @convention(c) (Handle?) -> Void
    let dbus_connection_unref: @convention(c) (Handle?) -> Void
    let dbus_connection_send: @convention(c) (Handle?, Handle?, UnsafeMutablePointer<UInt32>?) -> Bool32
    let dbus_connection_send_with_reply: @convention(c) (Handle?, Handle?, UnsafeMutablePointer<Handle?>?, Int32) -> Bool32
    let dbus_connection_dispatch: @convention(c) (Handle?) -> UInt32
    let dbus_connection_add_filter: @convention(c) (Handle?, HandleMessageFunction?, UnsafeMutableRawPointer?, FreeFunction?) -> Bool32
    let dbus_connection_remove_filter: @convention(c) (Handle?, HandleMessageFunction?, UnsafeMutableRawPointer?) -> Void
    /// Also the type of `dbus_connection_set_timeout_functions`.
    let dbus_connection_set_watch_functions:
        @convention(c) (
            Handle?, AddFunction?, RemoveFunction?, RemoveFunction?, UnsafeMutableRawPointer?, FreeFunction?
        ) -> Bool32
    let dbus_connection_set_timeout_functions:
        @convention(c) (
            Handle?, AddFunction?, RemoveFunction?, RemoveFunction?, UnsafeMutableRawPointer?, FreeFunction?
        ) -> Bool32
    let dbus_connection_set_dispatch_status_function: @convention(c) (Handle?, DispatchStatusFunction?, UnsafeMutableRawPointer?, FreeFunction?) -> Void

    let dbus_watch_get_unix_fd: @convention(c) (Handle?) -> Int32
    let dbus_watch_get_flags: @convention(c) (Handle?) -> UInt32
    let dbus_watch_get_enabled: @convention(c) (Handle?) -> Bool32
    let dbus_watch_handle: @convention(c) (Handle?, UInt32) -> Bool32
    let dbus_timeout_get_enabled: @convention(c) (Handle?) -> Bool32
    let dbus_timeout_get_interval: @convention(c) (Handle?) -> Int32
    let dbus_timeout_handle: @convention(c) (Handle?) -> Bool32

    let dbus_pending_call_set_notify: @convention(c) (Handle?, PendingCallNotifyFunction?, UnsafeMutableRawPointer?, FreeFunction?) -> Bool32
    let dbus_pending_call_steal_reply: @convention(c) (Handle?) -> Handle?
    let dbus_pending_call_cancel: @convention(c) (Handle?) -> Void
    let dbus_pending_call_unref: @convention(c) (Handle?) -> Void

    let dbus_message_new: @convention(c) (Int32) -> Handle?
    let dbus_message_unref: @convention(c) (Handle?) -> Void
    let dbus_message_get_type: @convention(c) (Handle?) -> Int32
    let dbus_message_get_path: GetStringFunction
    let dbus_message_get_interface: GetStringFunction
    let dbus_message_get_member: GetStringFunction
    let dbus_message_get_error_name: GetStringFunction
    let dbus_message_get_destination: GetStringFunction
    let dbus_message_get_sender: GetStringFunction
    let dbus_message_set_path: SetStringFunction
    let dbus_message_set_interface: SetStringFunction
    let dbus_message_set_member: SetStringFunction
    let dbus_message_set_error_name: SetStringFunction
    let dbus_message_set_destination: SetStringFunction
    let dbus_message_set_sender: SetStringFunction
    let dbus_message_get_serial: @convention(c) (Handle?) -> UInt32
    let dbus_message_set_serial: @convention(c) (Handle?, UInt32) -> Void
    let dbus_message_get_reply_serial: @convention(c) (Handle?) -> UInt32
    let dbus_message_set_reply_serial: @convention(c) (Handle?, UInt32) -> Bool32
    let dbus_message_get_no_reply: @convention(c) (Handle?) -> Bool32
    let dbus_message_set_no_reply: @convention(c) (Handle?, Bool32) -> Void
    let dbus_message_marshal:
        @convention(c) (Handle?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, UnsafeMutablePointer<Int32>?) ->
            Bool32
    let dbus_message_demarshal: @convention(c) (UnsafePointer<CChar>?, Int32, ErrorPointer) -> Handle?

    let dbus_validate_path: ValidateFunction
    let dbus_validate_interface: ValidateFunction
    let dbus_validate_member: ValidateFunction
    let dbus_validate_error_name: ValidateFunction
    let dbus_validate_bus_name: ValidateFunction
    let dbus_validate_utf8: ValidateFunction
    let dbus_signature_validate: ValidateFunction
    let dbus_signature_validate_single: ValidateFunction

    let dbus_message_iter_init_append: @convention(c) (Handle?, IterPointer) -> Void
    let dbus_message_iter_append_basic: @convention(c) (IterPointer, Int32, UnsafeRawPointer?) -> Bool32
    let dbus_message_iter_append_fixed_array: @convention(c) (IterPointer, Int32, UnsafeRawPointer?, Int32) -> Bool32
    let dbus_message_iter_open_container:
        @convention(c) (
            IterPointer, Int32, UnsafePointer<CChar>?, IterPointer
        ) -> Bool32
    let dbus_message_iter_close_container: @convention(c) (IterPointer, IterPointer) -> Bool32
    let dbus_message_iter_abandon_container_if_open: @convention(c) (IterPointer, IterPointer) -> Void
    let dbus_message_iter_init: @convention(c) (Handle?, IterPointer) -> Bool32
    let dbus_message_iter_get_arg_type: @convention(c) (IterPointer) -> Int32
    let dbus_message_iter_get_signature: @convention(c) (IterPointer) -> UnsafeMutablePointer<CChar>?
    let dbus_message_iter_next: @convention(c) (IterPointer) -> Bool32
    let dbus_message_iter_recurse: @convention(c) (IterPointer, IterPointer) -> Void
    let dbus_message_iter_get_basic: @convention(c) (IterPointer, UnsafeMutableRawPointer?) -> Void
    let dbus_message_iter_get_fixed_array:
        @convention(c) (IterPointer, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) ->
            Void

    // MARK: - Loading

    /// The library's soname, loaded unless `OTA_LIBDBUS` names another file (for tests).
    static let soname = "libdbus-1.so.3"

    /// The library this process uses, loaded on first use and kept for the life of the process.
    static let shared: Result<LibDBus, DBusLibraryUnavailable> = load(
        getenv("OTA_LIBDBUS").map { String(cString: $0) } ?? soname)

    /// The loaded library; only for code that runs after ``require()`` succeeded (a connection
    /// exists), so failing here is a programming error, not a missing package.
    static var loaded: LibDBus {
        switch shared {
        case .success(let library): library
        case .failure(let error): fatalError("libdbus was called before a connection was opened: \(error.detail)")
        }
    }

    /// The loaded library, or the error that says why it cannot be loaded.
    static func require() throws(DBusLibraryUnavailable) -> LibDBus {
        try shared.get()
    }

    /// Loads the library at `name` (a soname or a path) and resolves every function.
    static func load(_ name: String) -> Result<LibDBus, DBusLibraryUnavailable> {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            var reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            // dlerror starts with the name itself: "libdbus-1.so.3: cannot open shared object file…".
            if reason.hasPrefix(name + ": ") { reason.removeFirst(name.count + 2) }
            return .failure(DBusLibraryUnavailable(library: name, detail: "\(name) not found: \(reason)"))
        }
        do {
            return .success(try LibDBus(handle: handle, name: name))
        } catch {
            dlclose(handle)
            return .failure(error)
        }
    }

    private init(handle: UnsafeMutableRawPointer, name: String) throws(DBusLibraryUnavailable) {
        func resolve<Function>(_ symbol: String) throws(DBusLibraryUnavailable) -> Function {
            guard let address = dlsym(handle, symbol) else {
                throw DBusLibraryUnavailable(library: name, detail: "\(name) has no \(symbol)")
            }
            return unsafeBitCast(address, to: Function.self)
        }
        dbus_error_init = try resolve("dbus_error_init")
        dbus_error_free = try resolve("dbus_error_free")
        dbus_error_is_set = try resolve("dbus_error_is_set")
        dbus_free = try resolve("dbus_free")
        dbus_bus_get_private = try resolve("dbus_bus_get_private")
        dbus_bus_register = try resolve("dbus_bus_register")
        dbus_bus_get_unique_name = try resolve("dbus_bus_get_unique_name")
        dbus_connection_open_private = try resolve("dbus_connection_open_private")
        dbus_connection_set_exit_on_disconnect = try resolve("dbus_connection_set_exit_on_disconnect")
        dbus_connection_can_send_type = try resolve("dbus_connection_can_send_type")
        dbus_connection_close = try resolve("dbus_connection_close")
        dbus_connection_unref = try resolve("dbus_connection_unref")
        dbus_connection_send = try resolve("dbus_connection_send")
        dbus_connection_send_with_reply = try resolve("dbus_connection_send_with_reply")
        dbus_connection_dispatch = try resolve("dbus_connection_dispatch")
        dbus_connection_add_filter = try resolve("dbus_connection_add_filter")
        dbus_connection_remove_filter = try resolve("dbus_connection_remove_filter")
        dbus_connection_set_watch_functions = try resolve("dbus_connection_set_watch_functions")
        dbus_connection_set_timeout_functions = try resolve("dbus_connection_set_timeout_functions")
        dbus_connection_set_dispatch_status_function = try resolve("dbus_connection_set_dispatch_status_function")
        dbus_watch_get_unix_fd = try resolve("dbus_watch_get_unix_fd")
        dbus_watch_get_flags = try resolve("dbus_watch_get_flags")
        dbus_watch_get_enabled = try resolve("dbus_watch_get_enabled")
        dbus_watch_handle = try resolve("dbus_watch_handle")
        dbus_timeout_get_enabled = try resolve("dbus_timeout_get_enabled")
        dbus_timeout_get_interval = try resolve("dbus_timeout_get_interval")
        dbus_timeout_handle = try resolve("dbus_timeout_handle")
        dbus_pending_call_set_notify = try resolve("dbus_pending_call_set_notify")
        dbus_pending_call_steal_reply = try resolve("dbus_pending_call_steal_reply")
        dbus_pending_call_cancel = try resolve("dbus_pending_call_cancel")
        dbus_pending_call_unref = try resolve("dbus_pending_call_unref")
        dbus_message_new = try resolve("dbus_message_new")
        dbus_message_unref = try resolve("dbus_message_unref")
        dbus_message_get_type = try resolve("dbus_message_get_type")
        dbus_message_get_path = try resolve("dbus_message_get_path")
        dbus_message_get_interface = try resolve("dbus_message_get_interface")
        dbus_message_get_member = try resolve("dbus_message_get_member")
        dbus_message_get_error_name = try resolve("dbus_message_get_error_name")
        dbus_message_get_destination = try resolve("dbus_message_get_destination")
        dbus_message_get_sender = try resolve("dbus_message_get_sender")
        dbus_message_set_path = try resolve("dbus_message_set_path")
        dbus_message_set_interface = try resolve("dbus_message_set_interface")
        dbus_message_set_member = try resolve("dbus_message_set_member")
        dbus_message_set_error_name = try resolve("dbus_message_set_error_name")
        dbus_message_set_destination = try resolve("dbus_message_set_destination")
        dbus_message_set_sender = try resolve("dbus_message_set_sender")
        dbus_message_get_serial = try resolve("dbus_message_get_serial")
        dbus_message_set_serial = try resolve("dbus_message_set_serial")
        dbus_message_get_reply_serial = try resolve("dbus_message_get_reply_serial")
        dbus_message_set_reply_serial = try resolve("dbus_message_set_reply_serial")
        dbus_message_get_no_reply = try resolve("dbus_message_get_no_reply")
        dbus_message_set_no_reply = try resolve("dbus_message_set_no_reply")
        dbus_message_marshal = try resolve("dbus_message_marshal")
        dbus_message_demarshal = try resolve("dbus_message_demarshal")
        dbus_validate_path = try resolve("dbus_validate_path")
        dbus_validate_interface = try resolve("dbus_validate_interface")
        dbus_validate_member = try resolve("dbus_validate_member")
        dbus_validate_error_name = try resolve("dbus_validate_error_name")
        dbus_validate_bus_name = try resolve("dbus_validate_bus_name")
        dbus_validate_utf8 = try resolve("dbus_validate_utf8")
        dbus_signature_validate = try resolve("dbus_signature_validate")
        dbus_signature_validate_single = try resolve("dbus_signature_validate_single")
        dbus_message_iter_init_append = try resolve("dbus_message_iter_init_append")
        dbus_message_iter_append_basic = try resolve("dbus_message_iter_append_basic")
        dbus_message_iter_append_fixed_array = try resolve("dbus_message_iter_append_fixed_array")
        dbus_message_iter_open_container = try resolve("dbus_message_iter_open_container")
        dbus_message_iter_close_container = try resolve("dbus_message_iter_close_container")
        dbus_message_iter_abandon_container_if_open = try resolve("dbus_message_iter_abandon_container_if_open")
        dbus_message_iter_init = try resolve("dbus_message_iter_init")
        dbus_message_iter_get_arg_type = try resolve("dbus_message_iter_get_arg_type")
        dbus_message_iter_get_signature = try resolve("dbus_message_iter_get_signature")
        dbus_message_iter_next = try resolve("dbus_message_iter_next")
        dbus_message_iter_recurse = try resolve("dbus_message_iter_recurse")
        dbus_message_iter_get_basic = try resolve("dbus_message_iter_get_basic")
        dbus_message_iter_get_fixed_array = try resolve("dbus_message_iter_get_fixed_array")
    }
}

/// libdbus cannot be loaded: the library is not installed, or lacks a function this module calls.
///
/// ``DBusConnection/connect(to:)`` throws it before touching the bus; its description is the one
/// line the BlueZ roles show: "BlueZ needs libdbus (libdbus-1.so.3 not found: …); install
/// libdbus-1-3".
struct DBusLibraryUnavailable: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file that was loaded, such as `libdbus-1.so.3`.
    var library: String
    /// What went wrong, such as "libdbus-1.so.3 not found: libdbus-1.so.3: cannot open shared object
    /// file: No such file or directory".
    var detail: String

    /// The package that provides the library on Debian and Ubuntu.
    static let package = "libdbus-1-3"

    var description: String { "BlueZ needs libdbus (\(detail)); install \(Self.package)" }
}
#endif
