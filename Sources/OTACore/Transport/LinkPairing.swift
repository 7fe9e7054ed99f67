/// Pairing an update's link needs before its first write, as a catalog family states it (catalog
/// `pairing`): a transport that can pair (BlueZ) pairs first, with this passkey for Passkey Entry
/// or Just Works without one. A transport that cannot pair (the simulator, UDP) ignores it.
public struct LinkPairing: Sendable, Hashable {
    /// The six digits to enter (0…999 999), for a device that shows or expects a fixed passkey;
    /// `nil` for Just Works, or for a passkey asked of the person at the terminal.
    public var passkey: UInt32?
    /// Remove the bond once the update is over, so the device is not left paired to this host.
    public var removesBondAfterwards: Bool
    /// Who asked for it, for messages and `--dry-run` ("catalog family 'acme-lock'").
    public var source: String

    /// Describes the pairing a link needs.
    public init(passkey: UInt32? = nil, removesBondAfterwards: Bool = false, source: String) {
        self.passkey = passkey
        self.removesBondAfterwards = removesBondAfterwards
        self.source = source
    }

    /// Parses six decimal digits ("012345") as a passkey.
    ///
    /// - Returns: `nil` for anything else (fewer or more digits, signs, spaces, non-ASCII digits).
    public static func passkey(_ text: some StringProtocol) -> UInt32? {
        guard text.count == 6, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt32(text)
    }
}
