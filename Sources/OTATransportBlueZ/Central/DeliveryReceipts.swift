#if os(Linux)
/// How far writes without response may run ahead of what the device has received, on a link
/// whose write commands bluetoothd queues out of the app's sight (issue 10, item 3;
/// docs/decisions/0028).
///
/// bluetoothd reads an `AcquireWrite` socket as fast as it is written and answers
/// `WriteValue(type: command)` once the command is queued, so a write returning says only that
/// bluetoothd holds the bytes: the image can sit in its ATT write queue and the kernel's L2CAP
/// socket for seconds while progress shows 100 %. A *receipt* is an ATT request that travels
/// behind those commands: BlueZ's `bt_att` sends everything in its write queue before a queued
/// request (`pick_next_send_op` in `src/shared/att.c`), and the device answers the request only
/// after it received what came before it on the bearer. So when a receipt read, issued after the
/// first *n* bytes had left the socket, is answered, those *n* bytes have reached the device.
///
/// This type is the bookkeeping, without a transport: the writer asks ``admits(_:)`` before each
/// write and reports it with ``wrote(_:)``; the transport sends a receipt when an action says so,
/// reports what was still unread in the socket at that moment with ``sending(upTo:unread:)``, and its
/// answer with ``receiptArrived()`` or ``failed(_:)``. At most ``limit`` bytes are unconfirmed when a
/// write is admitted, so the bytes the engine counts as sent are never more than the device has
/// received plus ``limit`` plus one write. One receipt is outstanding at a time (bluetoothd
/// answers concurrent reads of one attribute with a single request), and a new one is asked for
/// only once half the window is unconfirmed, so receipts cost one small request per
/// ``limit``/2 bytes and the link never idles while one travels.
///
/// ```swift
/// var receipts = DeliveryReceipts(limit: 16_384, largestWrite: 510)
/// if receipts.admits(chunk.count) { send(chunk) }           // else wait for an answer
/// if receipts.wrote(chunk.count) == .sendReceipt { … }     // read the receipt attribute
/// ```
struct DeliveryReceipts: Sendable, Hashable {
    /// What the transport is asked to do.
    enum Action: Sendable, Hashable {
        /// Nothing.
        case none
        /// Send a receipt now and report it with ``DeliveryReceipts/sending(upTo:unread:)``.
        case sendReceipt
        /// Send a receipt after a short pause: the last one confirmed nothing new, because
        /// bluetoothd had not read the socket yet.
        case sendReceiptAfterPause
    }

    /// The most bytes unconfirmed when a write is admitted: at least twice the largest write, so
    /// that a writer kept waiting always has a receipt on its way.
    let limit: Int
    /// Bytes handed to bluetoothd.
    private(set) var written = 0
    /// Bytes a receipt showed the device has received.
    private(set) var confirmed = 0
    /// Whether a receipt was asked for and not answered yet.
    private(set) var isOutstanding = false
    /// What the outstanding receipt will confirm when answered, once it was sent.
    private(set) var covering: Int?
    /// Receipts answered.
    private(set) var receipts = 0
    /// The app's own requests that confirmed bytes as receipts (``requestAnswered(upTo:unread:)``).
    private(set) var requestsAnswered = 0
    /// The most bytes unconfirmed after any write.
    private(set) var largestUnconfirmed = 0
    /// Why receipts stopped (a failed read); writes are then admitted without them.
    private(set) var stopped: String?

    /// Creates the bookkeeping for a window of `limit` bytes, raised to twice `largestWrite`.
    ///
    /// A write is refused only when more than `limit − largestWrite` ≥ `limit`/2 bytes are
    /// unconfirmed, which is past the receipt threshold, so a receipt is then outstanding or asked for.
    init(limit: Int, largestWrite: Int) {
        self.limit = max(limit, 2 * max(1, largestWrite))
    }

    /// Bytes written and not yet confirmed.
    var unconfirmed: Int { written - confirmed }

    /// The receipt threshold: half the window.
    private var threshold: Int { limit / 2 }

    /// Whether a write of `count` bytes may go now. Without receipts (stopped), always.
    func admits(_ count: Int) -> Bool {
        stopped != nil || unconfirmed == 0 || unconfirmed + count <= limit
    }

    /// Records a write of `count` bytes that bluetoothd took.
    mutating func wrote(_ count: Int) -> Action {
        written += count
        largestUnconfirmed = max(largestUnconfirmed, unconfirmed)
        return askIfDue(advanced: true)
    }

    /// Records that the receipt asked for is being sent: of the first `written` bytes (taken
    /// before the socket was looked at), `unread` were still in the socket for bluetoothd (0 for
    /// `WriteValue`, which bluetoothd answers after queuing). Those go on the air after the
    /// receipt, so it confirms only what came before them.
    mutating func sending(upTo written: Int, unread: Int) {
        covering = max(confirmed, min(written, self.written) - max(0, unread))
    }

    /// Records the outstanding receipt's answer.
    mutating func receiptArrived() -> Action {
        guard isOutstanding else { return .none }
        isOutstanding = false
        let covered = covering ?? confirmed
        covering = nil
        receipts += 1
        let advanced = covered > confirmed
        confirmed = max(confirmed, covered)
        return askIfDue(advanced: advanced)
    }

    /// Records that a request the app wrote itself (a write with response, such as a Nordic
    /// Control Point request) was answered: it went to bluetoothd when the first `written` bytes
    /// had been handed over, `unread` of them still in the socket, so it travelled behind the
    /// others on the bearer exactly as a receipt does, and confirms them as one would
    /// (issue 18: a protocol that asks something every object then needs no receipt reads of its
    /// own, which would queue in front of its next request). The outstanding receipt, if any, is
    /// left as it is.
    mutating func requestAnswered(upTo written: Int, unread: Int) {
        guard stopped == nil else { return }
        confirmed = max(confirmed, min(written, self.written) - max(0, unread))
        requestsAnswered += 1
    }

    /// A receipt when none is outstanding and half the window is unconfirmed.
    private mutating func askIfDue(advanced: Bool) -> Action {
        guard stopped == nil, !isOutstanding, unconfirmed > 0, unconfirmed >= threshold else { return .none }
        isOutstanding = true
        return advanced ? .sendReceipt : .sendReceiptAfterPause
    }

    /// Records that a receipt could not be read: receipts stop, and every write is admitted.
    mutating func failed(_ reason: String) {
        isOutstanding = false
        covering = nil
        if stopped == nil { stopped = reason }
    }
}
#endif
