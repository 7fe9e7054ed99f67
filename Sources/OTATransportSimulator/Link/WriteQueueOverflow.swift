/// What the central's stack does with a write without response when its queue is full and the
/// writer did not wait (see ``SimulatedConnection/writeIgnoringFlowControl(_:to:)``).
public enum WriteQueueOverflow: Sendable, Hashable {
    /// Drop it without a word, as CoreBluetooth does when `canSendWriteWithoutResponse` is false.
    case dropSilently
    /// Refuse it with an error, as Android's `writeCharacteristic` returning `false` does.
    case reject
}
