#if os(Linux)
/// Answers the method calls an exported object receives: returns the reply's arguments, or throws
/// a ``DBusError`` to send that error as the reply (any other error becomes
/// `org.freedesktop.DBus.Error.Failed`).
///
/// The message is the call: its ``DBusMessage/interface``, ``DBusMessage/member``, arguments
/// (``DBusMessage/decode(_:)``) and ``DBusMessage/sender``.
typealias DBusMethodHandler = @Sendable (DBusMessage) async throws -> [DBusValue]

/// An object to serve on the bus with ``DBusConnection/export(_:)``: its path, its interfaces with
/// their properties, and a handler for its methods.
///
/// The connection answers the standard interfaces itself from ``interfaces``:
/// `org.freedesktop.DBus.Properties.Get` and `GetAll`, and, when ``isObjectManager`` is set,
/// `org.freedesktop.DBus.ObjectManager.GetManagedObjects` for every exported object below
/// ``path`` (announcing objects exported or removed later with `InterfacesAdded` and
/// `InterfacesRemoved`). Every other call goes to ``methodHandler``.
///
/// A BlueZ GATT application is an object manager at the application's root with service and
/// characteristic objects below it:
///
/// ```swift
/// try await bus.export(DBusObject(path: "/app", isObjectManager: true))
/// try await bus.export(DBusObject(
///     path: "/app/service0/char0",
///     interfaces: ["org.bluez.GattCharacteristic1": [
///         "UUID": .string(uuid), "Service": .objectPath("/app/service0"),
///         "Flags": .strings(["write-without-response", "notify"]),
///     ]],
///     methodHandler: { call in
///         switch call.member {
///         case "WriteValue": …; return []
///         default: throw DBusError(name: .unknownMethod, message: "no method \(call.member ?? "")")
///         }
///     }))
/// ```
struct DBusObject: Sendable {
    /// Where the object lives.
    var path: DBusObjectPath
    /// The object's interfaces, each with its properties by name. An interface without
    /// properties is an empty dictionary.
    var interfaces: [String: [String: DBusValue]]
    /// Whether the object implements `org.freedesktop.DBus.ObjectManager` for the objects below it.
    var isObjectManager: Bool
    /// Answers calls other than the standard interfaces; `nil` answers them with
    /// `org.freedesktop.DBus.Error.UnknownMethod`.
    ///
    /// Calls to one object are handled one at a time, in the order they arrived.
    var methodHandler: DBusMethodHandler?

    /// Creates an object description.
    init(
        path: DBusObjectPath,
        interfaces: [String: [String: DBusValue]] = [:],
        isObjectManager: Bool = false,
        methodHandler: DBusMethodHandler? = nil
    ) {
        self.path = path
        self.interfaces = interfaces
        self.isObjectManager = isObjectManager
        self.methodHandler = methodHandler
    }
}
#endif
