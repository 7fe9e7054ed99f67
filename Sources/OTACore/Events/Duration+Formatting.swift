extension Duration {
    /// The duration in seconds as a `Double`.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// A short human form: "250 ms", "4.2 s", "3 min 05 s".
    public var humanReadable: String {
        let total = seconds
        if total < 1 { return "\(Int((total * 1000).rounded())) ms" }
        if total < 60 { return String(oneDecimal: total) + " s" }
        let whole = Int(total.rounded())
        let secondsPart = whole % 60
        return "\(whole / 60) min \(secondsPart < 10 ? "0" : "")\(secondsPart) s"
    }
}

extension String {
    /// Formats `value` with one decimal ("4.2"), independent of the locale.
    public init(oneDecimal value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }
}
