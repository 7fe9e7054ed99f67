import Dispatch
import Foundation

/// Turns Ctrl-C (SIGINT) into cancellation of the running command, once. A second Ctrl-C
/// while the first is being handled ends the process at once.
final class InterruptHandler {
    private let source: any DispatchSourceSignal

    init(onInterrupt: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "ota.interrupt"))
        nonisolated(unsafe) var interrupted = false  // only touched on the source's serial queue
        source.setEventHandler {
            if interrupted { exit(130) }
            interrupted = true
            onInterrupt()
        }
        source.resume()
        self.source = source
    }

    /// Restores the default SIGINT behaviour.
    func cancel() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
