/// A binary min-heap of timer entries ordered by deadline, then by the order they were added,
/// so that timers due at the same instant fire in a deterministic order.
struct TimerQueue {
    struct Entry {
        var deadline: Duration
        var id: UInt64
        /// What a timer set with `VirtualTimeExecutor.schedule(at:_:)` calls, kept here so that
        /// setting and firing one touches no dictionary; `nil` for a sleep (whose continuation
        /// the executor files by id, to cancel it) and for a cancelled call.
        var call: (@Sendable () -> Void)?
    }

    private var heap: [Entry] = []

    var isEmpty: Bool { heap.isEmpty }
    var first: Entry? { heap.first }

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    mutating func insert(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Forgets the call of the timer `id`, if it is still queued: a linear search, for the rare
    /// cancellation.
    mutating func cancelCall(_ id: UInt64) {
        if let index = heap.firstIndex(where: { $0.id == id }) { heap[index].call = nil }
    }

    mutating func popFirst() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, Self.before(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, Self.before(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}
