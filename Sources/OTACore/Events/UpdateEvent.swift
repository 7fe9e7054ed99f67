/// One thing that happened during an update, in order. Library code never prints: a caller
/// renders these (progress bar, JSON lines, log).
public enum UpdateEvent: Sendable, Hashable {
    /// The update entered a new phase. `detail` says why, when it matters ("link lost: ...").
    case state(UpdateState, detail: String?, at: Duration)
    /// The link is up and these are its parameters; `chunkSize` is the payload per write.
    case linkEstablished(LinkParameters, chunkSize: Int, at: Duration)
    /// Bytes moved. Emitted at most once per configured progress interval, and once at the end
    /// of each transfer phase.
    case progress(UpdateProgress, at: Duration)
    /// What the preflight read from the device's Battery and Device Information services, once
    /// per update, after connecting and before the protocol's first write.
    case device(DeviceInformation, at: Duration)
    /// A note from the engine or the protocol worth showing in a verbose log.
    case note(String, at: Duration)

    /// When the event happened, measured from the start of the update on the engine's clock.
    public var time: Duration {
        switch self {
        case .state(_, _, let at), .linkEstablished(_, _, let at), .progress(_, let at), .device(_, let at), .note(_, let at): at
        }
    }
}
