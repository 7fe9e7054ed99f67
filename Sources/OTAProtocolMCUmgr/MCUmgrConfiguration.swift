import OTACore

/// What an `ota update` with MCUmgr ends with.
public enum MCUmgrUpdateMode: String, Sendable, Hashable, CaseIterable {
    /// Upload into slot 1 and check its hash; nothing is marked, nothing resets.
    case upload
    /// Upload, mark it for one test boot, reset, check that it runs, then confirm it: a new image
    /// that does not come up is reverted by MCUboot. The default.
    case test
    /// Upload, mark it permanent, reset, check that it runs.
    case confirm
}

/// MCUmgr's settings, read from protocol parameters, each declared once below.
///
/// `buffer-size` and `buffer-count` describe the simulated device (its `buf_size` and
/// `buf_count`); the client always asks the device and uses them only for a device without the
/// MCUmgr parameters command.
public struct MCUmgrConfiguration: ProtocolConfiguration, Hashable {
    /// `mode`: upload, test or confirm.
    public static let modeParameter = ProtocolParameter.text("mode", summary: "upload, test (test boot, then confirm) or confirm", default: "test")
    /// `window`: upload requests in flight at most (also bounded by the device's `buf_count`).
    public static let windowParameter = ProtocolParameter.integer(
        "window", summary: "upload requests in flight, at most the device's buffer count (1: one at a time, as Linux tools do)", default: 8,
        in: 1...32
    )
    /// `alignment`: data lengths end on multiples of this.
    public static let alignmentParameter = ProtocolParameter.integer("alignment", summary: "upload data alignment in bytes", default: 4, in: 1...64)
    /// `erase-timeout-ms`: how long the first upload response may take.
    public static let eraseTimeoutParameter = ProtocolParameter.duration(
        "erase-timeout-ms", summary: "wait for the first upload response, while the device erases its slot", default: .seconds(30),
        milliseconds: 1000...600_000
    )
    /// `reset-wait-ms`: pause after the reset before reconnecting.
    public static let resetWaitParameter = ProtocolParameter.duration(
        "reset-wait-ms", summary: "pause after a reset before reconnecting", default: .seconds(1), milliseconds: 0...120_000
    )
    /// `buffer-size`: the simulated device's `buf_size`.
    public static let bufferSizeParameter = ProtocolParameter.integer(
        "buffer-size", summary: "SMP buffer size of the simulated device (the client asks a real one)", default: 2475, in: 64...65_535
    )
    /// `buffer-count`: the simulated device's `buf_count`.
    public static let bufferCountParameter = ProtocolParameter.integer(
        "buffer-count", summary: "SMP buffer count of the simulated device (the client asks a real one)", default: 4, in: 1...64
    )

    /// `erase`: how the simulated device erases slot 1 for an upload.
    public static let eraseParameter = ProtocolParameter.text(
        "erase",
        summary:
            "how the simulated device erases slot 1: progressive (each sector as writes reach it) or first (the image's sectors before answering the first request, Zephyr's default)",
        default: "progressive")

    /// Every parameter, in the order `ota protocols` lists them.
    public static let parameters = [
        modeParameter.spec, windowParameter.spec, alignmentParameter.spec, eraseTimeoutParameter.spec, resetWaitParameter.spec,
        bufferSizeParameter.spec, bufferCountParameter.spec, eraseParameter.spec,
    ]
    /// `mcumgr`.
    public static var protocolName: String { MCUmgrProtocol.name }

    /// The GATT layout.
    public var profile = MCUmgrGATTProfile()
    /// What the update ends with. Default ``MCUmgrUpdateMode/test``.
    public var mode = MCUmgrUpdateMode.test
    /// Upload requests in flight at most. Default 8 (the device's `buf_count` bounds it too).
    public var window = Self.windowParameter.defaultValue
    /// Data alignment. Default 4.
    public var alignment = Self.alignmentParameter.defaultValue
    /// Wait for the first upload response. Default 30 s.
    public var eraseTimeout = Self.eraseTimeoutParameter.defaultValue
    /// Pause after a reset before reconnecting. Default 1 s.
    public var resetWait = Self.resetWaitParameter.defaultValue
    /// The simulated device's buffer size, and the client's guess for a device that does not say.
    public var bufferSize = Self.bufferSizeParameter.defaultValue
    /// The simulated device's buffer count.
    public var bufferCount = Self.bufferCountParameter.defaultValue
    /// How the simulated device erases slot 1. Default progressive.
    public var erase = MCUmgrDeviceModel.Settings.EraseMode.progressive

    /// The simulated device these parameters describe (buffers, erase mode).
    public var deviceSettings: MCUmgrDeviceModel.Settings {
        var settings = MCUmgrDeviceModel.Settings(bufferSize: bufferSize, bufferCount: bufferCount)
        settings.eraseMode = erase
        return settings
    }

    /// The defaults.
    public init() {}

    /// Reads every parameter.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a value out of range or an unknown mode.
    public init(reading reader: ProtocolParameterReader) throws(OTAError) {
        let modeText = try reader.value(Self.modeParameter)
        guard let mode = MCUmgrUpdateMode(rawValue: modeText) else {
            throw OTAError(.invalidParameter, "parameter 'mode': '\(MessageText.name(modeText))' is not upload, test or confirm")
        }
        self.mode = mode
        window = try reader.value(Self.windowParameter)
        alignment = try reader.value(Self.alignmentParameter)
        eraseTimeout = try reader.value(Self.eraseTimeoutParameter)
        resetWait = try reader.value(Self.resetWaitParameter)
        bufferSize = try reader.value(Self.bufferSizeParameter)
        bufferCount = try reader.value(Self.bufferCountParameter)
        let eraseText = try reader.value(Self.eraseParameter)
        switch eraseText {
        case "progressive": erase = .progressive
        case "first": erase = .wholeImageFirst
        default: throw OTAError(.invalidParameter, "parameter 'erase': '\(MessageText.name(eraseText))' is not progressive or first")
        }
    }
}
