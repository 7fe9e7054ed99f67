import Synchronization

/// Finds devices through one transport: a stream of what is heard.
///
/// ```swift
/// let scanner = try provider.scanner(options: options)
/// for device in try await scanner.listen(for: .seconds(5)) {
///     let family = try catalog.family(for: device.advertisement, device: device.address)
/// }
/// ```
///
/// A transport implements ``discoveries()``; ``listen(for:until:)`` and
/// ``advertisement(of:within:)`` build on it for every transport alike.
public protocol DeviceScanner: Sendable {
    /// The clock a listening window runs on (``RealTimeClock`` for a radio, a virtual or test
    /// clock otherwise).
    var clock: any Clock<Duration> { get }

    /// Starts listening and returns what is heard, in the order it is heard.
    ///
    /// - Important: The stream runs until it is dropped or its consuming task is cancelled (a
    ///   radio), or until every device was reported (a finite list, such as the simulated
    ///   fleet); then the transport stops listening. It finishes by throwing when the transport
    ///   fails while listening.
    /// - Throws: ``OTAError`` (usually ``OTAError/Code/connectionFailed``) with a one-line cause
    ///   and fix when listening cannot start.
    func discoveries() async throws(OTAError) -> AsyncThrowingStream<DiscoveredDevice, any Error>
}

extension DeviceScanner {
    /// Listens for `duration` on ``clock`` (less when the stream finishes first) and returns
    /// each device heard once, with its latest advertisement, in the order first heard.
    ///
    /// - Parameters:
    ///   - duration: how long to listen at most.
    ///   - stop: ends the scan early when it accepts a device; then only the devices it accepts
    ///     are returned.
    /// - Throws: ``OTAError`` when listening cannot start or fails.
    public func listen(
        for duration: Duration,
        until stop: @escaping @Sendable (DiscoveredDevice) -> Bool = { _ in false }
    ) async throws(OTAError) -> [DiscoveredDevice] {
        let stream = try await discoveries()
        let heard = HeardDevices()
        do {
            return try await withTimeout(duration, clock: clock, timeoutError: heard.closeWindow()) {
                for try await device in stream {
                    heard.add(device)
                    if stop(device) { return heard.devices.filter(stop) }
                }
                return heard.devices
            }
        } catch {
            // The end of the window is the normal end of a scan of a radio.
            if heard.isWindowClosed { return heard.devices }
            throw OTAError.wrapping(error, context: "scanning")
        }
    }

    /// The advertisement of the device at `address`, or `nil` when it was not heard within
    /// `window`.
    ///
    /// - Throws: ``OTAError`` when listening cannot start or fails.
    public func advertisement(of address: String, within window: Duration) async throws(OTAError) -> Advertisement? {
        try await listen(for: window) { $0.address == address }.first { $0.address == address }?.advertisement
    }
}

/// The devices heard so far, shared between the listening task and the caller that keeps them
/// when the window closes.
private final class HeardDevices: Sendable {
    private let state = Mutex<(order: [String], latest: [String: DiscoveredDevice], closed: Bool)>(([], [:], false))

    /// Records `device`.
    func add(_ device: DiscoveredDevice) {
        state.withLock { state in
            if state.latest[device.address] == nil { state.order.append(device.address) }
            state.latest[device.address] = device
        }
    }

    /// Notes that the window closed and returns the error that ends the listening task.
    func closeWindow() -> OTAError {
        state.withLock { $0.closed = true }
        return OTAError(.timeout, "listening window closed")
    }

    /// Whether the listening window closed (rather than the stream failing).
    var isWindowClosed: Bool { state.withLock { $0.closed } }

    /// Each device once, latest report, in the order first heard.
    var devices: [DiscoveredDevice] {
        state.withLock { state in state.order.compactMap { state.latest[$0] } }
    }
}
