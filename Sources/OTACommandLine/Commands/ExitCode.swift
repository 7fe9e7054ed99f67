import OTACore

/// The tool's exit codes, documented in `docs/cli.md`.
public enum ExitCode: Int32, Sendable {
    /// Success.
    case success = 0
    /// The device refused the image or reported it corrupt.
    case updateFailed = 1
    /// The command line was wrong: unknown command, option, protocol, profile or parameter.
    case usage = 2
    /// The firmware file, a manifest or a campaign file is missing, unreadable, malformed, or does
    /// not fit the device.
    case badInput = 3
    /// The device could not be reached, lacks the protocol's service, or cannot take an update
    /// now (battery below the minimum).
    case deviceUnavailable = 4
    /// The link dropped, stalled or timed out; running again resumes or restarts.
    case linkFailed = 5
    /// A campaign run that stopped with nothing wrong and the campaign not finished: outside its
    /// window, its window closed, or only devices skipped for their battery are left. Run it
    /// again later (EX_TEMPFAIL of sysexits.h).
    case tryLater = 75
    /// Interrupted by Ctrl-C; the device keeps what it received.
    case interrupted = 130
    /// A bug in the tool.
    case internalError = 70

    /// The exit code for an update error.
    static func forError(_ error: OTAError) -> ExitCode {
        switch error.code {
        case .deviceRejected, .verificationFailed, .malformedResponse: .updateFailed
        case .unknownProtocol, .invalidParameter, .selectionFailed: .usage
        case .invalidImage, .imageTooLarge, .invalidManifest, .incompatible, .storage: .badInput
        case .connectionFailed, .missingCharacteristic, .deviceNotReady: .deviceUnavailable
        case .disconnected, .timeout, .stalled, .transport: .linkFailed
        case .cancelled: .interrupted
        default: .internalError
        }
    }
}
