import Foundation

/// Where a ``PacketLinkTransport``'s packets go and come from: a serial line with its framing, a
/// connected UDP socket. It carries whole packets; joining a protocol's writes into packets is the
/// transport's.
package protocol PacketChannel: Sendable {
    /// Sends one packet whole.
    ///
    /// - Returns: `nil`, or a one-line message for the error, naming where it was sent
    ///   ("cannot write to /dev/ttyACM0: Input/output error").
    func send(_ packet: Data) -> String?

    /// Starts delivering what arrives, on a thread of the channel's own: `packet` for each whole
    /// packet, then `ended` once, with why the channel failed (`nil`: it was closed here).
    func startReceiving(_ packet: @escaping @Sendable (Data) -> Void, ended: @escaping @Sendable (String?) -> Void)

    /// Closes the channel (returning once it is let go of, when the next connection depends on it).
    func close() async
}
