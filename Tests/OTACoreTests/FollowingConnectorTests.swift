import OTACore
import Synchronization
import Testing

/// A connector that follows the device: where the connector it follows found the device is
/// where every later connection goes.
@Suite struct FollowingConnectorTests {
    /// A device reached at `name`; after a jump it is found at `next` (or nowhere).
    final class Place: Connector {
        let name: String
        let next: Place?
        let connects = Mutex(0)
        init(_ name: String, next: Place? = nil) {
            self.name = name
            self.next = next
        }
        var deviceDescription: String { name }
        var airAddress: String? { name }
        func connect() async throws(TransportError) -> any Transport {
            connects.withLock { $0 += 1 }
            throw TransportError(.connectionFailed, "\(name) connected (a test stops here)")
        }
        func reappeared(matching rule: ReappearanceRule, within window: Duration) async throws(OTAError) -> any Connector {
            guard let next else { throw OTAError(.connectionFailed, "\(name): nothing came back \(rule.description)") }
            return next
        }
    }

    @Test func afterAJumpEveryConnectionGoesWhereTheDeviceWasFound() async throws {
        let bootloader = Place("C0:FF:EE:00:00:11")
        let application = Place("C0:FF:EE:00:00:10", next: bootloader)
        let following = FollowingConnector(application)
        #expect(following.deviceDescription == "C0:FF:EE:00:00:10")

        let found = try await following.reappeared(matching: ReappearanceRule(addresses: ["C0:FF:EE:00:00:11"], name: "Dfu12345"), within: .seconds(1))
        // It returns itself, so that the engine (and the next part) keep following.
        #expect(found as? FollowingConnector === following)
        #expect(following.deviceDescription == "C0:FF:EE:00:00:11")
        #expect(following.airAddress == "C0:FF:EE:00:00:11")
        _ = try? await following.connect()
        #expect(bootloader.connects.withLock { $0 } == 1)
        #expect(application.connects.withLock { $0 } == 0)
        #expect(following.original as? Place === application)
    }

    @Test func whenNothingIsFoundItStaysWhereItWas() async throws {
        let application = Place("C0:FF:EE:00:00:10")
        let following = FollowingConnector(application)
        let error = await #expect(throws: OTAError.self) {
            _ = try await following.reappeared(matching: ReappearanceRule(addresses: [], name: "Dfu12345"), within: .seconds(1))
        }
        #expect(error?.message == "C0:FF:EE:00:00:10: nothing came back advertising as Dfu12345")
        #expect(following.current as? Place === application)
    }

    @Test func aDirectSessionsConnectorFollowsTheDeviceAndIsNotWrappedTwice() {
        let session = DirectTransportSession(connector: Place("C0:FF:EE:00:00:10"), clock: TestClock(), restartDelay: .zero)
        let following = try? #require(session.connector as? FollowingConnector)
        #expect(following != nil)
        let again = DirectTransportSession(connector: session.connector, clock: TestClock(), restartDelay: .zero)
        #expect(again.connector as? FollowingConnector === following)
    }
}
