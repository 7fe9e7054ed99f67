import Foundation
import OTACore

/// MCUmgr's image management commands on their own, outside an update: list the slots, mark an
/// image for a test boot or confirm it, erase slot 1, reset. What `ota image` and `ota reset`
/// run, over any transport that carries the SMP characteristic.
///
/// Each call is one exchange on a context from ``UpdateEngine/withConnection(using:connector:_:)``
/// with an ``MCUmgrClient`` (which declares the SMP characteristic). A device's refusal comes back
/// as ``OTAError/Code/deviceRejected`` naming its code ("image management rc 5 (hash not found)").
///
/// ```swift
/// let client = MCUmgrClient()
/// let state = try await UpdateEngine(clock: clock).withConnection(using: client, connector: connector) { context throws(OTAError) in
///     try await MCUmgrImageManager(configuration: client.configuration).list(context: context)
/// }
/// ```
public struct MCUmgrImageManager: Sendable {
    /// The GATT layout and the reset wait.
    public var configuration: MCUmgrConfiguration

    /// A manager.
    public init(configuration: MCUmgrConfiguration = MCUmgrConfiguration()) {
        self.configuration = configuration
    }

    /// Runs `body` with the SMP conversation on `context`.
    private func withChannel<R>(_ context: UpdateContext, _ body: (SMPChannel) async throws(OTAError) -> R) async throws(OTAError) -> R {
        let smp = configuration.profile.smp
        return try await context.withNotifications(from: smp) { (inbox) throws(OTAError) -> R in
            try await body(SMPChannel(context: context, inbox: inbox, characteristic: smp))
        }
    }

    /// The slots, as the device lists them.
    public func list(context: UpdateContext) async throws(OTAError) -> ImageStateResponse {
        try await withChannel(context) { (channel) throws(OTAError) in
            try await MCUmgrClient.readState(channel)
        }
    }

    /// OS echo: the text the device sends back.
    public func echo(_ text: String, context: UpdateContext) async throws(OTAError) -> String {
        try await withChannel(context) { (channel) throws(OTAError) in
            let payload = try await channel.exchange(.echo(text))
            guard let answer = payload["r"]?.textValue else {
                throw MCUmgrWireError.malformed("the echo response has no 'r'").otaError
            }
            return answer
        }
    }

    /// The device's SMP buffer size and count (OS group, MCUmgr parameters).
    public func parameters(context: UpdateContext) async throws(OTAError) -> MCUmgrParameters {
        try await withChannel(context) { (channel) throws(OTAError) in
            try await channel.exchange(.parameters, as: MCUmgrParameters.init(payload:))
        }
    }

    /// Marks the image with `hash` for one test boot (MCUboot swaps it in at the next reset and
    /// reverts it at the one after unless it is confirmed), and returns the slots after.
    public func test(hash: Data, context: UpdateContext) async throws(OTAError) -> ImageStateResponse {
        try await setState(hash: hash, confirm: false, context: context)
    }

    /// Confirms the image with `hash` (`nil`: the running one): the running image stays; an
    /// image in slot 1 is swapped in for good at the next reset. Returns the slots after.
    public func confirm(hash: Data?, context: UpdateContext) async throws(OTAError) -> ImageStateResponse {
        try await setState(hash: hash, confirm: true, context: context)
    }

    private func setState(hash: Data?, confirm: Bool, context: UpdateContext) async throws(OTAError) -> ImageStateResponse {
        try await withChannel(context) { (channel) throws(OTAError) in
            try await channel.exchange(.setImageState(hash: hash, confirm: confirm), as: ImageStateResponse.init(payload:))
        }
    }

    /// Erases `slot` (`nil`: the device's default, slot 1), waiting up to the erase timeout.
    public func erase(slot: Int?, context: UpdateContext) async throws(OTAError) {
        try await withChannel(context) { (channel) throws(OTAError) in
            _ = try await channel.exchange(.erase(slot: slot), timeout: configuration.eraseTimeout)
        }
    }

    /// Resets the device, then waits ``MCUmgrConfiguration/resetWait`` so that it has restarted
    /// (and MCUboot has swapped a marked image in) when this returns. A link that drops before
    /// the answer is the reset under way, not an error.
    ///
    /// - Returns: whether the device answered before the link dropped.
    @discardableResult
    public func reset(context: UpdateContext) async throws(OTAError) -> Bool {
        let answered: Bool = try await withChannel(context) { (channel) throws(OTAError) in
            do throws(OTAError) {
                _ = try await channel.exchange(.reset)
                return true
            } catch {
                guard error.code == .disconnected else { throw error }
                return false
            }
        }
        try await context.sleep(for: configuration.resetWait, purpose: "waiting for the device's restart")
        return answered
    }
}
