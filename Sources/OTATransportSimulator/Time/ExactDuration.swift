extension Duration {
    /// `self` times `factor`, computed on the 128-bit count of attoseconds: the same exact value
    /// as `self * factor` (which traps on overflow too), without the generic `BinaryInteger`
    /// path that costs hundreds of instructions a call.
    @inline(__always)
    func exactlyTimes(_ factor: Int64) -> Duration {
        Duration(attoseconds: attoseconds * Int128(factor))
    }

    /// `.microseconds(count)` for an integer count, exactly, without the generic path.
    @inline(__always)
    static func exactMicroseconds(_ count: Int) -> Duration {
        Duration(attoseconds: Int128(count) * 1_000_000_000_000)
    }

    /// `.nanoseconds(count)` for an integer count, exactly, without the generic path.
    @inline(__always)
    static func exactNanoseconds(_ count: Int64) -> Duration {
        Duration(attoseconds: Int128(count) * 1_000_000_000)
    }
}
