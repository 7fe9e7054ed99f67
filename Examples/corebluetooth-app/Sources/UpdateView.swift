#if canImport(SwiftUI)
import SwiftUI

/// The update screen: progress, what is happening, and the "do not close the app" guidance
/// while an update runs.
public struct UpdateView: View {
    let model: FirmwareUpdateViewModel
    let start: () async -> Void

    /// A view over `model`; `start` begins the update.
    public init(model: FirmwareUpdateViewModel, start: @escaping () async -> Void) {
        self.model = model
        self.start = start
    }

    public var body: some View {
        VStack(spacing: 16) {
            Text(model.screen.title).font(.headline)
            ProgressView(value: model.screen.progress)
            if !model.screen.message.isEmpty {
                Text(model.screen.message).font(.footnote).multilineTextAlignment(.center)
            }
            if model.screen.phase == .ready || model.screen.phase == .failed || model.screen.phase == .completed {
                Button(model.screen.phase == .failed ? "Try again" : "Update") { Task { await start() } }
            }
        }
        .padding()
        .interactiveDismissDisabled(model.screen.keepAppOpen)
    }
}
#endif
