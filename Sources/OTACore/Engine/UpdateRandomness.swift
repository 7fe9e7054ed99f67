import Synchronization

/// The random numbers one update draws (``UpdateContext/randomNumber()``): from the system's
/// source, or, with ``UpdateConfiguration/randomSeed``, a SplitMix64 sequence that is the same
/// on every platform and every run.
final class UpdateRandomness: Sendable {
    private let isSeeded: Bool
    private let seeded: Mutex<UInt64>

    /// Draws from `seed`'s sequence, or from the system's source when `nil`.
    init(seed: UInt64?) {
        isSeeded = seed != nil
        seeded = Mutex(seed ?? 0)
    }

    /// The next number.
    func next() -> UInt64 {
        guard isSeeded else {
            var system = SystemRandomNumberGenerator()
            return system.next()
        }
        return seeded.withLock { state in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
