import Dispatch
import Foundation

/// Turns Ctrl-C (SIGINT), or any of the given signals, into cancellation of the running command,
/// once. A second signal while the first is being handled ends the process at once (status 128 +
/// the signal, as the shell reports it).
package final class InterruptHandler {
    private let sources: [any DispatchSourceSignal]
    private let signals: [Int32]

    /// Starts handling `signals` (SIGINT unless told otherwise); `onInterrupt` gets the signal.
    package init(signals: [Int32] = [SIGINT], onInterrupt: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "ota.interrupt")
        nonisolated(unsafe) var interrupted = false  // only touched on `queue`, which is serial
        self.signals = signals
        sources = signals.map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler {
                if interrupted { exit(128 + signalNumber) }
                interrupted = true
                onInterrupt(signalNumber)
            }
            source.resume()
            return source
        }
    }

    /// Restores the default behaviour of the signals.
    package func cancel() {
        for source in sources { source.cancel() }
        for signalNumber in signals { signal(signalNumber, SIG_DFL) }
    }
}
