import OTACore
import Testing

@Suite struct DisconnectionWatchersTests {
    private static func everything(_ stream: AsyncStream<DisconnectReason>) async -> [DisconnectReason] {
        var reasons: [DisconnectReason] = []
        for await reason in stream { reasons.append(reason) }
        return reasons
    }

    @Test func eachWatcherIsToldOnceWhenTheNoticeIsDelivered() async throws {
        var watchers = DisconnectionWatchers()
        let (first, second) = (watchers.watch(), watchers.watch())
        #expect(watchers.reason == nil)
        let marked = watchers.markDown(DisconnectReason("supervision timeout"))
        let notice = try #require(marked)
        #expect(watchers.reason?.description == "supervision timeout")
        notice.deliver()
        #expect(await Self.everything(first).map(\.description) == ["supervision timeout"])
        #expect(await Self.everything(second).map(\.description) == ["supervision timeout"])
    }

    @Test func aWatcherAfterTheLinkWentDownIsToldAtOnce() async throws {
        var watchers = DisconnectionWatchers()
        // Down but not yet delivered: a new watcher does not wait for the notice.
        let marked = watchers.markDown(.closedByApp)
        let notice = try #require(marked)
        let late = watchers.watch()
        #expect(await Self.everything(late) == [.closedByApp])
        notice.deliver()
    }

    @Test func theFirstReasonStandsAndNobodyIsToldTwice() async throws {
        var watchers = DisconnectionWatchers()
        let early = watchers.watch()
        let marked = watchers.markDown(DisconnectReason("device rebooted"))
        let notice = try #require(marked)
        let again = watchers.markDown(.closedByApp)
        #expect(again == nil)
        #expect(watchers.reason?.description == "device rebooted")
        notice.deliver()
        notice.deliver()
        #expect(await Self.everything(early).map(\.description) == ["device rebooted"])
        let late = watchers.watch()
        #expect(await Self.everything(late).map(\.description) == ["device rebooted"])
    }
}
