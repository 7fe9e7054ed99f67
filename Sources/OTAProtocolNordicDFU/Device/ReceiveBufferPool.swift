/// The bootloader's pool of receive buffers for Packet writes, with the flash queue that frees
/// them (`NordicBootloaderModel` §5; `m_buffer_pool` in the SDK's `nrf_dfu_ble.c`).
///
/// On hardware every Packet write takes a buffer from a fixed pool (`MAX_DFU_BUFFERS`, by default
/// page size / packet length + 1 = 17); a command-object buffer is freed as soon as its bytes are
/// copied, a data-object buffer only when the flash has written it. Flash work runs in order: a
/// Create erases its pages first, then each buffered packet is written. A packet that finds no
/// free buffer is silently dropped.
///
/// This model needs "now". With a host clock (``NordicBootloaderModel/init(configuration:clock:)``)
/// it uses it. Without one it keeps a synthetic clock: every packet advances it by
/// ``NordicBootloaderModel/Configuration/packetSpacingWithoutClock``, and every Control Point
/// request or Packet Receipt Notification moves it to the moment the flash is idle, because the
/// central waited for the device's answer there. Flash timing comes from the configuration, not
/// from the host's flash (the model cannot see the host's timing); both are deterministic.
struct ReceiveBufferPool {
    private let capacity: Int
    private let pageEraseTime: Duration
    private let writeBytesPerSecond: Double
    private let spacing: Duration
    private let clocked: Bool

    /// When each buffer still held will be free (its flash write done), in ascending order.
    private var busyUntil: [Duration] = []
    /// When the flash queue will be empty.
    private var flashIdleAt: Duration = .zero
    /// The model's idea of now.
    private(set) var now: Duration = .zero

    init(configuration: NordicBootloaderModel.Configuration, clocked: Bool) {
        capacity = max(0, configuration.receiveBufferCount)
        pageEraseTime = max(.zero, configuration.flashPageEraseTime)
        writeBytesPerSecond = configuration.flashWriteBytesPerSecond
        spacing = max(.zero, configuration.packetSpacingWithoutClock)
        self.clocked = clocked
    }

    /// Buffers taken by flash writes that had not finished at the last event.
    var buffersInUse: Int { busyUntil.count }

    /// Moves time forward: to `hostNow` when there is a clock, by one packet spacing otherwise.
    private mutating func advance(hostNow: Duration?, packet: Bool) {
        if clocked, let hostNow {
            now = max(now, hostNow)
        } else if packet {
            now += spacing
        }
        busyUntil.removeAll { $0 <= now }
    }

    /// A Packet write arrived: `true` when a buffer is free for it, `false` when it is dropped.
    mutating func allocate(hostNow: Duration?) -> Bool {
        advance(hostNow: hostNow, packet: true)
        return busyUntil.count < capacity
    }

    /// The packet just allocated is written to flash: its buffer stays taken until the write,
    /// queued behind earlier flash work, completes.
    mutating func holdForFlashWrite(bytes: Int) {
        let start = max(now, flashIdleAt)
        flashIdleAt = start + writeTime(bytes)
        busyUntil.append(flashIdleAt)
    }

    /// A Create data object queued the erase of `pages` pages.
    mutating func erase(pages: Int, hostNow: Duration?) {
        advance(hostNow: hostNow, packet: false)
        flashIdleAt = max(now, flashIdleAt) + pageEraseTime * max(0, pages)
    }

    /// The central waited for an answer (a Control Point request or a receipt notification). With
    /// a clock this only reads it; without one, the flash is taken to have caught up meanwhile.
    mutating func synchronize(hostNow: Duration?) {
        if clocked {
            advance(hostNow: hostNow, packet: false)
        } else {
            now = max(now, flashIdleAt)
            busyUntil.removeAll { $0 <= now }
        }
    }

    private func writeTime(_ bytes: Int) -> Duration {
        guard writeBytesPerSecond.isFinite, writeBytesPerSecond > 0 else { return .zero }
        let nanoseconds = (Double(max(0, bytes)) / writeBytesPerSecond * 1e9).rounded()
        guard nanoseconds < 9e18 else { return .seconds(1_000_000) }
        return .nanoseconds(Int64(nanoseconds))
    }
}
