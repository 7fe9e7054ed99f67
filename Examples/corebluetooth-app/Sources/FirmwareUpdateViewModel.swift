import Foundation
import OTACore
import OTATransportCoreBluetooth
import Observation

/// The view model of an app's update screen: runs one update through the CoreBluetooth
/// transport and publishes an ``UpdateScreen`` for the view.
///
/// ```swift
/// let central = CoreBluetoothCentral(restoreIdentifier: "com.example.updater")
/// let model = FirmwareUpdateViewModel()
/// await model.update(image, using: FramedClient(), connector: central.connector(for: id), clock: central.clock)
/// ```
@MainActor @Observable
public final class FirmwareUpdateViewModel {
    /// What the screen shows.
    public private(set) var screen = UpdateScreen()
    /// The report of the last successful update.
    public private(set) var report: UpdateReport?

    /// A model with nothing started.
    public init() {}

    /// Updates the device behind `connector` with `image`, following the engine's events.
    public func update(
        _ image: FirmwareImage, using client: any UpdateProtocol, connector: any Connector, clock: any Clock<Duration>,
        configuration: UpdateConfiguration = UpdateConfiguration()
    ) async {
        let engine = UpdateEngine(configuration: configuration, clock: clock)
        await run { sink async throws(OTAError) -> UpdateReport in
            try await engine.update(image, using: client, connector: connector, events: sink)
        }
    }

    /// Runs `update` (which reports to the continuation it gets) and follows its events: the seam
    /// tests use to run the engine where their transport lives.
    public func run(_ update: @escaping @Sendable (AsyncStream<UpdateEvent>.Continuation) async throws(OTAError) -> UpdateReport) async {
        screen = UpdateScreen()
        report = nil
        let (events, sink) = AsyncStream.makeStream(of: UpdateEvent.self)
        async let outcome: Result<UpdateReport, OTAError> = {
            defer { sink.finish() }
            do throws(OTAError) {
                return .success(try await update(sink))
            } catch {
                return .failure(error)
            }
        }()
        for await event in events { screen.apply(event) }
        let result = await outcome
        screen.finish(result)
        if case .success(let value) = result { report = value }
    }
}
