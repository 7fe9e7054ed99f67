import Foundation
import OTACore

/// What the update screen of an app shows, derived from the engine's events alone: the logic of
/// the example's view, kept free of SwiftUI so that it is tested on Linux.
public struct UpdateScreen: Sendable, Hashable {
    /// The phase the screen is in.
    public enum Phase: Sendable, Hashable {
        /// Nothing started yet.
        case ready
        /// Connecting or preparing the device.
        case preparing
        /// Sending the image.
        case sending
        /// The link went down: waiting to reconnect and resume.
        case paused
        /// The device checks and installs the image.
        case finishing
        /// Done.
        case completed
        /// The update failed; ``message`` says why.
        case failed
    }

    /// The phase.
    public private(set) var phase: Phase = .ready
    /// How far the transfer is, 0…1 (kept while paused).
    public private(set) var progress: Double = 0
    /// The headline ("Updating firmware", "Connection lost — waiting for the device").
    public private(set) var title = "Ready to update"
    /// The line under it: the guidance of the case study while an update runs, the cause on failure.
    public private(set) var message = ""
    /// Times the update came back after losing the link.
    public private(set) var resumes = 0

    /// Whether the app must stay open (and the phone near the device): true from the first
    /// connection until the update ends.
    public var keepAppOpen: Bool {
        switch phase {
        case .preparing, .sending, .paused, .finishing: true
        case .ready, .completed, .failed: false
        }
    }

    /// The guidance shown while ``keepAppOpen`` holds.
    public static let guidance = "Do not close the app and keep your phone near the device until the update is complete."

    /// A screen with nothing started.
    public init() {}

    /// Takes one event of the engine.
    public mutating func apply(_ event: UpdateEvent) {
        switch event {
        case .state(let state, let detail, _):
            enter(state, detail: detail)
        case .progress(let progress, _):
            self.progress = max(self.progress, progress.fraction)
            if phase == .paused || phase == .preparing { enter(.transferring, detail: nil) }
        case .linkEstablished, .device, .note:
            break
        }
    }

    /// Takes the end of the update.
    public mutating func finish(_ result: Result<UpdateReport, OTAError>) {
        switch result {
        case .success:
            enter(.completed, detail: nil)
        case .failure(let error):
            phase = .failed
            title = "The update failed"
            message = error.message
        }
    }

    private mutating func enter(_ state: UpdateState, detail: String?) {
        switch state {
        case .connecting, .negotiating:
            if phase == .paused { break }
            phase = .preparing
            title = "Connecting to the device"
            message = Self.guidance
        case .transferring:
            if phase == .paused { resumes += 1 }
            phase = .sending
            title = "Updating firmware"
            message = Self.guidance
        case .paused:
            phase = .paused
            title = "Connection lost — waiting for the device"
            message = "The update continues where it stopped once the device is back. " + Self.guidance
        case .verifying, .committing:
            phase = .finishing
            title = "Installing"
            message = Self.guidance
        case .completed:
            phase = .completed
            progress = 1
            title = "Firmware updated"
            message = ""
        case .failed:
            phase = .failed
            title = "The update failed"
            message = detail ?? message
        }
    }
}
