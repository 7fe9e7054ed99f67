/// A binary min-heap of timer entries ordered by deadline, then by the order they were added,
/// so that timers due at the same instant fire in a deterministic order.
///
/// A timer set with `VirtualTimeExecutor.schedule(at:_:)` keeps its closure here, so that setting
/// and firing one touches no dictionary; the closures live in a table of reused slots beside the
/// heap, which moves only plain keys (moving an entry that held a closure would retain and
/// release it at every step).
///
/// In front of the heap, one slot holds a timer set to fire before every timer in the heap: the
/// simulated link's timers (its next connection event, a delivery) are nearly always the
/// earliest when they are set, behind sleeps that wake much later (a stall watchdog, a response
/// timeout), so most timers go in and out of the slot without a trip through the heap
/// (decision 0072). The order is the same: a timer set earlier than the one in the slot pushes
/// that one into the heap.
struct TimerQueue {
    struct Entry {
        var deadline: Duration
        var id: UInt64
        /// What the timer calls; `nil` for a sleep (whose continuation the executor files by id,
        /// to cancel it) and for a cancelled call.
        var call: (@Sendable () -> Void)?
    }

    private struct Key {
        /// The deadline's attoseconds: compared inline, where `Duration`'s own comparisons are
        /// calls into the standard library (two per sift step). The same order.
        var deadline: Int128
        var id: UInt64
        /// The call's slot in `calls`, or -1 for a sleep.
        var slot: Int
    }

    /// A queued call, in a struct so that the array holds the closure as it is: an array of
    /// bare closures stores them reabstracted, which allocates a thunk on the way in and out.
    private struct Call {
        var action: @Sendable () -> Void
    }

    /// The timer that fires before every timer in `heap`, if one was set so.
    private struct Front {
        var deadline: Int128
        var id: UInt64
        var call: Call?
    }

    private var front: Front?
    private var heap: [Key] = []
    private var calls: [Call?] = []
    private var freeSlots: [Int] = []

    var isEmpty: Bool { front == nil && heap.isEmpty }
    /// The deadline of the timer that fires next.
    var firstDeadline: Duration? { firstDeadlineAttoseconds.map { Duration(attoseconds: $0) } }
    /// ``firstDeadline`` in attoseconds, compared inline.
    var firstDeadlineAttoseconds: Int128? { front?.deadline ?? heap.first?.deadline }

    /// Whether a timer due at `deadline` in place `id` fires before one due at `otherDeadline` in
    /// place `otherID`.
    private static func before(_ deadline: Int128, _ id: UInt64, _ otherDeadline: Int128, _ otherID: UInt64) -> Bool {
        deadline != otherDeadline ? deadline < otherDeadline : id < otherID
    }

    /// Whether the key at `a` fires before the one at `b`.
    private func before(_ a: Int, _ b: Int) -> Bool {
        Self.before(heap[a].deadline, heap[a].id, heap[b].deadline, heap[b].id)
    }

    mutating func insert(_ entry: Entry) {
        let deadline = entry.deadline.attoseconds
        if let current = front {
            guard Self.before(deadline, entry.id, current.deadline, current.id) else {
                insertIntoHeap(entry)
                return
            }
            // Earlier than the one in front: that one goes into the heap, behind it.
            front = nil
            insertIntoHeap(Entry(deadline: Duration(attoseconds: current.deadline), id: current.id, call: current.call?.action))
        } else if let first = heap.first, !Self.before(deadline, entry.id, first.deadline, first.id) {
            insertIntoHeap(entry)
            return
        }
        front = Front(deadline: deadline, id: entry.id, call: entry.call.map(Call.init(action:)))
    }

    private mutating func insertIntoHeap(_ entry: Entry) {
        var slot = -1
        if let call = entry.call {
            if let free = freeSlots.popLast() {
                slot = free
                calls[free] = Call(action: call)
            } else {
                slot = calls.count
                calls.append(Call(action: call))
            }
        }
        heap.append(Key(deadline: entry.deadline.attoseconds, id: entry.id, slot: slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard before(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Forgets the call of the timer `id`, if it is still queued: a linear search, for the rare
    /// cancellation.
    mutating func cancelCall(_ id: UInt64) {
        if front?.id == id {
            front?.call = nil
            return
        }
        if let key = heap.first(where: { $0.id == id }), key.slot >= 0 { calls[key.slot] = nil }
    }

    /// The timer that fires next, taken out.
    ///
    /// - Precondition: the queue is not empty. (The run loop checks `firstDeadline` first; an
    ///   optional `Entry` returned here was destroyed through its type's metadata, a call into
    ///   the runtime per timer fired.)
    mutating func removeFirst() -> Entry {
        if let first = front.take() {
            return Entry(deadline: Duration(attoseconds: first.deadline), id: first.id, call: first.call?.action)
        }
        precondition(!heap.isEmpty, "no timer to take")
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, before(left, smallest) { smallest = left }
            if right < heap.count, before(right, smallest) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        var call: (@Sendable () -> Void)?
        if first.slot >= 0 {
            call = calls[first.slot].take()?.action
            freeSlots.append(first.slot)
        }
        return Entry(deadline: Duration(attoseconds: first.deadline), id: first.id, call: call)
    }
}
