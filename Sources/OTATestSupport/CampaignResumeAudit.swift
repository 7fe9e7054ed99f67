import Foundation
import OTACore

/// Whether the devices of a campaign whose attempts were cut off (a killed run or gateway)
/// resumed, read from the campaign's history and the bytes each simulated device counted it
/// received (``received(in:device:)``): the bar of issue 17, "re-sent ≤ one window each".
///
/// A device's re-sent bytes are what it received beyond what a device of the same campaign
/// that was never cut off received; each cut-off attempt may cost at most one window. A device
/// that restarted from byte 0 instead re-receives everything it had before, which is more than
/// a window when it had received more: ``beyondWindowBeforeLast`` counts those devices, so that
/// a test can require one (else a restart from 0 would pass unseen).
public struct CampaignResumeAudit: Sendable {
    /// One device whose attempts were cut off.
    public struct Device: Sendable, Hashable {
        /// Its address.
        public var address: String
        /// Attempts on it that a stopped run left open.
        public var interruptions: Int
        /// Bytes of data writes it received over the campaign.
        public var received: Int
        /// The byte its completing attempt started from.
        public var resumedFrom: Int
        /// What it received beyond a device never cut off.
        public var resent: Int
        /// A lower bound of what it had received before its completing attempt.
        public var receivedBeforeLast: Int
    }

    /// The cut-off devices that completed, by address.
    public var devices: [Device] = []
    /// The cut-off devices that re-received more than a window per interruption, described.
    public var overWindow: [String] = []
    /// Cut-off devices that had received more than a window per interruption before their
    /// completing attempt (a restart from 0 would have re-sent more than the bound).
    public var beyondWindowBeforeLast = 0
    /// What a device never cut off received (the least of them), or nil when there is none.
    public var clean: Int?
    /// Devices never cut off that received something else than ``clean``.
    public var uneven: [String] = []
    /// The window, in bytes of data writes.
    public var window: Int

    /// Audits `history`.
    ///
    /// - Parameters:
    ///   - window: the protocol's window in bytes of data writes (what the device counts).
    ///   - received: the bytes a device received, by address.
    public init(history: [CampaignHistoryEntry], window: Int, received: (String) throws -> Int) rethrows {
        self.window = window
        var interruptions: [String: Int] = [:]
        var completions: [String: String] = [:]
        for entry in history {
            guard let device = entry.device else { continue }
            if entry.detail == CampaignRunner.stoppedDuringAttempt { interruptions[device, default: 0] += 1 }
            if entry.event == "completed", let detail = entry.detail { completions[device] = detail }
        }
        var counts: [String: Int] = [:]
        for device in completions.keys { counts[device] = try received(device) }
        let cleanCounts = counts.filter { interruptions[$0.key] == nil }
        clean = cleanCounts.values.min()
        if let clean {
            uneven = cleanCounts.filter { $0.value != clean }.map { "\($0.key): \($0.value) bytes, not \(clean)" }.sorted()
        }
        guard let clean else { return }
        for (address, count) in interruptions.sorted(by: { $0.key < $1.key }) {
            guard let detail = completions[address], let received = counts[address] else { continue }
            let from = CampaignRunner.sentAndResumedFrom(detail)?.from ?? 0
            let device = Device(
                address: address, interruptions: count, received: received, resumedFrom: from, resent: received - clean,
                receivedBeforeLast: received - clean + from)
            devices.append(device)
            if device.resent > count * window {
                overWindow.append(
                    "\(address): \(device.resent) bytes re-sent over \(count) interruption(s), above \(count) × the \(window)-byte window (resumed from byte \(from))"
                )
            }
            if device.receivedBeforeLast > count * window { beyondWindowBeforeLast += 1 }
        }
    }

    /// The most bytes re-sent per interruption, over the cut-off devices.
    public var mostResentPerInterruption: Int { devices.map { $0.resent / max(1, $0.interruptions) }.max() ?? 0 }

    /// One line for a test's output.
    public var summary: String {
        "\(devices.count) cut-off devices resumed, at most \(mostResentPerInterruption) bytes re-sent per interruption (window \(window)), \(beyondWindowBeforeLast) of them past a window when cut off"
    }

    /// The count a campaign's simulated device keeps (`NAME.received` in its directory, 8 bytes
    /// little-endian), for `address` ("sim:PROFILE/N").
    public static func received(in directory: URL, device address: String) throws -> Int {
        let name = address.replacingOccurrences(of: "sim:", with: "").replacingOccurrences(of: "/", with: "-")
        let bytes = try Data(contentsOf: directory.appendingPathComponent(name + ".received"))
        return Int(bytes.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
}
