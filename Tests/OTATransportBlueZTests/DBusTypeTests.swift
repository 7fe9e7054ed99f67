#if os(Linux)
import Testing

@testable import OTATransportBlueZ

@Suite(.needsLibDBus) struct DBusTypeTests {
    @Test(arguments: [
        "y", "b", "n", "q", "i", "u", "x", "t", "d", "s", "o", "g", "h", "v", "ay", "as", "aay", "a{sv}",
        "a{oa{sa{sv}}}", "(ia{s(ay)})", "a(sv)", "a{qv}", "((y))",
    ])
    func parsesAndPrintsOneType(signature: String) throws {
        #expect(try DBusType(signature: signature).signature == signature)
    }

    @Test func parsesDictionariesAsTheirOwnCase() throws {
        #expect(try DBusType(signature: "a{sv}") == .dictionary(key: .string, value: .variant))
        #expect(try DBusType(signature: "a(sv)") == .array(.structure([.string, .variant])))
    }

    @Test func parsesAMessageSignature() throws {
        #expect(
            try DBusType.types(inSignature: "sa{sv}as") == [
                .string, .dictionary(key: .string, value: .variant), .array(.string),
            ]
        )
        #expect(try DBusType.types(inSignature: "").isEmpty)
    }

    @Test(arguments: [
        "", "a", "a{vs}", "a{s}", "a{sss}", "{sv}", "()", "(i", "i)", "z", "ss",
        String(repeating: "a", count: 33) + "y",
        String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33),
    ])
    func rejectsInvalidSignatures(signature: String) {
        let error = #expect(throws: DBusError.self) { try DBusType(signature: signature) }
        #expect(error?.name == .invalidSignature)
    }

    @Test func objectPathsAreValidated() {
        for valid in ["/", "/org/bluez/hci0", "/a_1/B2"] {
            #expect(DBusObjectPath(valid)?.rawValue == valid)
        }
        for invalid in ["", "org", "/org/", "//", "/a//b", "/a-b", "/é"] {
            #expect(DBusObjectPath(invalid) == nil, "\(invalid)")
        }
        let app: DBusObjectPath = "/app"
        #expect(app.appending("service0")?.appending("char0")?.rawValue == "/app/service0/char0")
        #expect(DBusObjectPath.root.appending("app") == app)
        #expect(app.appending("bad-name") == nil)
        #expect(app.isAncestor(of: "/app/service0"))
        #expect(!app.isAncestor(of: "/app"))
        #expect(!app.isAncestor(of: "/application"))
        #expect(DBusObjectPath.root.isAncestor(of: app))
    }
}
#endif
