import Foundation

/// The files a new vendor protocol starts with: the layout every protocol module shares
/// (`Client/ Device/ Wire/`, a descriptor and a GATT profile) and tests of its state machine
/// without a transport and of the whole update against its device model in the simulator.
///
/// The generated protocol is a working template (BEGIN with size and CRC-32 on a Control
/// characteristic, the image streamed on a Data characteristic, END), so everything builds and
/// its tests pass except one, `replaceTheTemplateWithTheVendorProtocol`, which fails on purpose
/// with the list of what to fill in. The templates are raw strings: `\(…)` in them is generated
/// code; `__Name__`, `__name__`, `__Target__` and the `__…_UUID__` tokens are replaced.
enum ScaffoldTemplates {
    /// The files for a protocol called `name` (UpperCamelCase), relative to the package root.
    static func files(name: String) -> [(path: String, contents: String)] {
        let target = "OTAProtocol\(name)"
        let base = UUID().uuidString.lowercased()
        // Fresh UUIDs per scaffold, so a new protocol never matches another one's devices; the
        // characteristics differ from the service in their last digit.
        let tokens = [
            "__Target__": target,
            "__Name__": name,
            "__name__": name.lowercased(),
            "__SERVICE_UUID__": String(base.dropLast()) + "0",
            "__DATA_UUID__": String(base.dropLast()) + "1",
            "__CONTROL_UUID__": String(base.dropLast()) + "2",
        ]
        return templates.map { path, text in
            var path = path
            var text = text
            for (token, value) in tokens {
                path = path.replacingOccurrences(of: token, with: value)
                text = text.replacingOccurrences(of: token, with: value)
            }
            return (path, text)
        }
    }

    /// The files, with tokens.
    static let templates: [(String, String)] = [
        ("Sources/__Target__/__Name__Protocol.swift", protocolFile),
        ("Sources/__Target__/__Name__GATTProfile.swift", profileFile),
        ("Sources/__Target__/Client/__Name__Client.swift", clientFile),
        ("Sources/__Target__/Client/__Name__UpdateStateMachine.swift", stateMachineFile),
        ("Sources/__Target__/Wire/__Name__Command.swift", commandFile),
        ("Sources/__Target__/Wire/__Name__Reply.swift", replyFile),
        ("Sources/__Target__/Device/__Name__DeviceModel.swift", deviceModelFile),
        ("Tests/__Target__Tests/__Name__WireTests.swift", wireTestsFile),
        ("Tests/__Target__Tests/__Name__StateMachineTests.swift", stateMachineTestsFile),
        ("Tests/__Target__Tests/__Name__EndToEndTests.swift", endToEndTestsFile),
    ]

    static let protocolFile = #"""
        import OTACore

        /// The __Name__ update protocol: BEGIN (size, CRC-32) on Control, the image on Data, END.
        ///
        /// TODO(vendor): this is the scaffold's template exchange; describe the vendor's protocol here
        /// once it replaces the template (see Tests/__Target__Tests/__Name__EndToEndTests.swift for the
        /// checklist).
        ///
        /// Register ``descriptor`` in the app's ``ProtocolRegistry`` to offer it as `--protocol __name__`.
        public enum __Name__Protocol {
            /// The name users select it by.
            public static let name = "__name__"

            /// The protocol's registry entry. Registering it brings its catalog family (devices that
            /// advertise the profile's service) and its demo device (`sim:__name__-demo`).
            public static let descriptor = ProtocolDescriptor(
                name: name,
                summary: "__Name__ (scaffold template): BEGIN with size and CRC-32, the image on Data, END",
                parameters: __Name__GATTProfile.parameters,
                makeClient: { (parameters) throws(OTAError) in
                    __Name__Client(profile: try __Name__GATTProfile(parameters: parameters))
                },
                makeDeviceModel: { (parameters) throws(OTAError) in
                    __Name__DeviceModel(profile: try __Name__GATTProfile(parameters: parameters))
                },
                defaultFamily: .init(
                    name: "__name__-ota",
                    summary: "Devices with __Name__ firmware",
                    match: .init(services: [__Name__GATTProfile.defaultService])
                ),
                demoDevices: [
                    .init(name: "__name__-demo", hardwareProfile: "esp32s3-mtu244-2m", advertisedName: "__Name__-Demo-01", rssi: -58)
                ]
            )
        }

        """#

    static let profileFile = #"""
        import OTACore

        /// The GATT layout of __Name__: one service with a Data characteristic (write without
        /// response) and a Control characteristic (write with response + notify).
        ///
        /// TODO(vendor): the default UUIDs were generated by the scaffold; put the vendor's here.
        public struct __Name__GATTProfile: Sendable, Hashable {
            /// The service.
            public var service: GATTUUID
            /// Data: image bytes, written without response.
            public var dataCharacteristic: GATTUUID
            /// Control: commands written with response; replies notified.
            public var controlCharacteristic: GATTUUID

            /// Default service UUID `__SERVICE_UUID__`.
            public static let defaultService = GATTUUID("__SERVICE_UUID__")!
            /// Default Data UUID `__DATA_UUID__`.
            public static let defaultData = GATTUUID("__DATA_UUID__")!
            /// Default Control UUID `__CONTROL_UUID__`.
            public static let defaultControl = GATTUUID("__CONTROL_UUID__")!

            /// Creates a profile; the defaults are the documented UUIDs.
            public init(
                service: GATTUUID = Self.defaultService,
                dataCharacteristic: GATTUUID = Self.defaultData,
                controlCharacteristic: GATTUUID = Self.defaultControl
            ) {
                self.service = service
                self.dataCharacteristic = dataCharacteristic
                self.controlCharacteristic = controlCharacteristic
            }

            /// `service-uuid`: the service.
            public static let serviceParameter = ProtocolParameter.uuid("service-uuid", summary: "__Name__ service UUID", default: defaultService)
            /// `data-uuid`: the Data characteristic.
            public static let dataParameter = ProtocolParameter.uuid("data-uuid", summary: "Data characteristic, write without response", default: defaultData)
            /// `control-uuid`: the Control characteristic.
            public static let controlParameter = ProtocolParameter.uuid("control-uuid", summary: "Control characteristic, write + notify", default: defaultControl)
            /// Every parameter the protocol reads, declared once, in the order `ota protocols` lists them.
            public static let parameters = [serviceParameter.spec, dataParameter.spec, controlParameter.spec]

            /// Reads `service-uuid`, `data-uuid` and `control-uuid` from `parameters`.
            ///
            /// - Throws: ``OTAError/Code/invalidParameter`` for an unknown name or a value that is not a UUID.
            public init(parameters: ProtocolParameters) throws(OTAError) {
                let reader = try parameters.reader(declared: Self.parameters, protocolName: __Name__Protocol.name)
                self.init(
                    service: try reader.value(Self.serviceParameter),
                    dataCharacteristic: try reader.value(Self.dataParameter),
                    controlCharacteristic: try reader.value(Self.controlParameter)
                )
            }

            /// Data as a characteristic identifier.
            public var data: CharacteristicID { CharacteristicID(service: service, characteristic: dataCharacteristic) }
            /// Control as a characteristic identifier.
            public var control: CharacteristicID { CharacteristicID(service: service, characteristic: controlCharacteristic) }
        }

        """#

    static let clientFile = #"""
        import Foundation
        import OTACore

        /// The app side of __Name__: a thin driver that performs what ``__Name__UpdateStateMachine``
        /// asks for, through the ``UpdateContext`` only (never the transport).
        ///
        /// TODO(vendor): to resume after a disconnect, conform to `ResumableUpdateProtocol`; to let
        /// `ota abort` discard a session, conform to `AbortableUpdateProtocol`.
        public struct __Name__Client: UpdateProtocol {
            /// The GATT layout.
            public var profile: __Name__GATTProfile

            /// Creates a client.
            public init(profile: __Name__GATTProfile = __Name__GATTProfile()) {
                self.profile = profile
            }

            /// Data (write without response) and Control (write, notify).
            public var requirements: [CharacteristicRequirement] {
                [
                    CharacteristicRequirement("__Name__ Data", profile.data, properties: .writeWithoutResponse),
                    CharacteristicRequirement("__Name__ Control", profile.control, properties: [.write, .notify]),
                ]
            }

            /// Data writes carry no header and go without response; the engine cuts the image into
            /// chunks from this and the negotiated link (`context.chunkPlan`).
            public var dataWrites: DataWriteShape { DataWriteShape(headerLength: 0, alignment: 1, kind: .withoutResponse) }

            /// Sends `image`: BEGIN, the whole image on Data, END.
            public func run(_ image: FirmwareImage, context: UpdateContext) async throws(OTAError) -> UpdateOutcome {
                guard let size = UInt32(exactly: image.count) else {
                    throw OTAError(.imageTooLarge, "\(image.name) is \(image.count) bytes; __Name__ carries at most 4 GiB")
                }
                var machine = __Name__UpdateStateMachine(size: size, crc: image.crc32)
                let profile = self.profile
                return try await context.withNotifications(from: profile.control) { (inbox) throws(OTAError) -> UpdateOutcome in
                    var action = machine.start()
                    while true {
                        switch action {
                        case .sendAndAwaitReply(let command):
                            if case .end = command { context.enter(.verifying) }
                            try await context.write(command.encoded, to: profile.control, kind: .withResponse, purpose: command.description)
                            let timeout = if case .end = command { context.configuration.verifyTimeout } else { context.configuration.responseTimeout }
                            action = machine.receive(try await inbox.next(timeout: timeout, awaiting: "\(command) reply"))
                        case .streamImage:
                            context.enter(.transferring)
                            try await context.stream(image, range: 0..<image.count, to: profile.data)
                            action = machine.streamFinished()
                        case .finished:
                            return .accepted
                        case .fail(let error):
                            throw error
                        }
                    }
                }
            }
        }

        """#

    static let stateMachineFile = #"""
        import Foundation
        import OTACore

        /// The client's side of __Name__ as a value-type state machine: one method per input, each
        /// returning what to do next. No I/O: ``__Name__Client`` performs the actions, and the tests
        /// drive it without a transport.
        ///
        /// ```
        /// idle ─start()─▶ awaitingBegin ─begin ok─▶ streaming ─streamFinished()─▶ awaitingEnd ─end ok─▶ done
        ///                      │ begin rejected                                       │ end rejected
        ///                      ▼                                                      ▼
        ///                    failed ◀──────────── malformed or out-of-turn reply ── failed
        /// ```
        ///
        /// TODO(vendor): replace the template exchange with the vendor's; keep one method per input
        /// (a reply, the end of a stream, a timeout) and failures as `.fail(OTAError)`.
        public struct __Name__UpdateStateMachine: Sendable {
            /// Where the exchange stands.
            public enum State: Sendable, Hashable {
                case idle
                case awaitingBegin
                case streaming
                case awaitingEnd
                case done
                case failed
            }

            /// What the driver must do next.
            public enum Action: Sendable {
                /// Write the command to Control with response, wait for the reply notification and
                /// pass it to ``receive(_:)``.
                case sendAndAwaitReply(__Name__Command)
                /// Stream the whole image on Data, then call ``streamFinished()``.
                case streamImage
                /// The device accepted the image.
                case finished
                /// The update failed.
                case fail(OTAError)
            }

            /// The current state.
            public private(set) var state: State = .idle
            private let size: UInt32
            private let crc: UInt32

            /// Prepares an update of an image of `size` bytes with CRC-32 `crc`.
            public init(size: UInt32, crc: UInt32) {
                self.size = size
                self.crc = crc
            }

            /// Begins the exchange.
            public mutating func start() -> Action {
                precondition(state == .idle, "start() called twice")
                state = .awaitingBegin
                return .sendAndAwaitReply(.begin(size: size, crc: crc))
            }

            /// The device notified `bytes` on Control.
            public mutating func receive(_ bytes: Data) -> Action {
                guard let reply = __Name__Reply(decoding: bytes) else {
                    return fail(.malformedResponse, "malformed reply on __Name__ Control (\(bytes.count) bytes, expected 2)")
                }
                switch (state, reply) {
                case (.awaitingBegin, .begin(.ok)):
                    state = .streaming
                    return .streamImage
                case (.awaitingBegin, .begin(let status)):
                    return fail(status == .tooLarge ? .imageTooLarge : .deviceRejected, "device rejected BEGIN: \(status)")
                case (.awaitingEnd, .end(.ok)):
                    state = .done
                    return .finished
                case (.awaitingEnd, .end(let status)):
                    let code: OTAError.Code = status == .badCRC || status == .badSize ? .verificationFailed : .deviceRejected
                    return fail(code, "device rejected END: \(status); run the update again")
                default:
                    return fail(.malformedResponse, "unexpected \(reply) on __Name__ Control while \(state.activity)")
                }
            }

            /// Every byte of the image was handed to the link.
            public mutating func streamFinished() -> Action {
                precondition(state == .streaming, "streamFinished() outside streaming")
                state = .awaitingEnd
                return .sendAndAwaitReply(.end)
            }

            private mutating func fail(_ code: OTAError.Code, _ message: String) -> Action {
                state = .failed
                return .fail(OTAError(code, message))
            }
        }

        extension __Name__UpdateStateMachine.State {
            /// What the exchange is doing, for messages.
            var activity: String {
                switch self {
                case .idle: "idle"
                case .awaitingBegin: "waiting for the BEGIN reply"
                case .streaming: "streaming data"
                case .awaitingEnd: "waiting for the END reply"
                case .done: "done"
                case .failed: "failed"
                }
            }
        }

        """#

    static let commandFile = #"""
        import Foundation
        import OTACore

        /// A command written to __Name__ Control. Integers are little-endian.
        ///
        /// | command | bytes |
        /// |---|---|
        /// | BEGIN | `0x01`, size (u32), CRC-32 of the image (u32) |
        /// | END   | `0x02` |
        ///
        /// TODO(vendor): the vendor's commands, with byte vectors from its documentation or a capture
        /// in `__Name__WireTests`.
        public enum __Name__Command: Sendable, Hashable, CustomStringConvertible {
            /// Begin an update of `size` bytes whose CRC-32 is `crc`.
            case begin(size: UInt32, crc: UInt32)
            /// All bytes sent: verify and install.
            case end

            /// The op code of BEGIN.
            public static let beginOpCode: UInt8 = 0x01
            /// The op code of END.
            public static let endOpCode: UInt8 = 0x02

            /// The bytes on the wire.
            public var encoded: Data {
                var writer = ByteWriter(capacity: 9)
                switch self {
                case .begin(let size, let crc):
                    writer.u8(Self.beginOpCode)
                    writer.u32(size)
                    writer.u32(crc)
                case .end:
                    writer.u8(Self.endOpCode)
                }
                return writer.data
            }

            /// Parses a command, as the device does; `nil` for an unknown op code or a wrong length.
            public init?(decoding bytes: Data) {
                var reader = ByteReader(bytes)
                switch reader.u8() {
                case Self.beginOpCode:
                    guard let size = reader.u32(), let crc = reader.u32(), reader.remaining == 0 else { return nil }
                    self = .begin(size: size, crc: crc)
                case Self.endOpCode:
                    guard reader.remaining == 0 else { return nil }
                    self = .end
                default:
                    return nil
                }
            }

            /// "BEGIN" or "END".
            public var description: String {
                switch self {
                case .begin: "BEGIN"
                case .end: "END"
                }
            }
        }

        """#

    static let replyFile = #"""
        import Foundation

        /// A reply notified on __Name__ Control: `0x81 status` for BEGIN, `0x82 status` for END.
        ///
        /// TODO(vendor): the vendor's replies.
        public enum __Name__Reply: Sendable, Hashable, CustomStringConvertible {
            /// The answer to BEGIN.
            case begin(__Name__Status)
            /// The answer to END.
            case end(__Name__Status)

            /// The reply op code for BEGIN.
            public static let beginOpCode: UInt8 = 0x81
            /// The reply op code for END.
            public static let endOpCode: UInt8 = 0x82

            /// The bytes on the wire.
            public var encoded: Data {
                switch self {
                case .begin(let status): Data([Self.beginOpCode, status.rawValue])
                case .end(let status): Data([Self.endOpCode, status.rawValue])
                }
            }

            /// Parses a notification; `nil` unless it is exactly two bytes with a known op code.
            public init?(decoding bytes: Data) {
                let bytes = [UInt8](bytes)
                guard bytes.count == 2 else { return nil }
                switch bytes[0] {
                case Self.beginOpCode: self = .begin(__Name__Status(rawValue: bytes[1]))
                case Self.endOpCode: self = .end(__Name__Status(rawValue: bytes[1]))
                default: return nil
                }
            }

            /// "BEGIN reply (status 0, ok)".
            public var description: String {
                switch self {
                case .begin(let status): "BEGIN reply (\(status))"
                case .end(let status): "END reply (\(status))"
                }
            }
        }

        /// A status byte in a reply. Unknown values are kept, so a message can name them.
        public struct __Name__Status: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
            public let rawValue: UInt8
            public init(rawValue: UInt8) { self.rawValue = rawValue }

            /// 0: accepted.
            public static let ok = Self(rawValue: 0)
            /// 1: the CRC-32 of what the device holds differs from the announced one.
            public static let badCRC = Self(rawValue: 1)
            /// 2: the device received a different number of bytes than BEGIN announced.
            public static let badSize = Self(rawValue: 2)
            /// 3: the image does not fit the device's update slot.
            public static let tooLarge = Self(rawValue: 3)

            /// The status's meaning in a few words.
            public var meaning: String {
                switch self {
                case .ok: "ok"
                case .badCRC: "CRC mismatch"
                case .badSize: "size mismatch"
                case .tooLarge: "image too large for the update slot"
                default: "unknown status"
                }
            }

            /// "status 1, CRC mismatch".
            public var description: String { "status \(rawValue), \(meaning)" }
        }

        """#

    static let deviceModelFile = #"""
        import Foundation
        import OTACore
        import Synchronization

        /// The device side of __Name__, for the simulator (and for test peripherals served through a
        /// real Bluetooth stack).
        ///
        /// - BEGIN: answers `0x81 3` when the image cannot fit flash, else starts over and answers `0x81 0`.
        /// - Data: appended in order; each sector is erased just before its first byte is written.
        /// - END: `0x82 2` when the byte count differs from BEGIN's, `0x82 1` when the CRC-32 of what
        ///   flash holds differs, else `0x82 0`.
        ///
        /// TODO(vendor): behave like the vendor's firmware, so the tests exercise the real exchange.
        public final class __Name__DeviceModel: DeviceModel {
            private struct State {
                var receiving = false
                var expectedSize = 0
                var expectedCRC: UInt32 = 0
                var received = 0
                var erasedUpTo = 0
                var flashFailed = false
            }

            /// The GATT layout.
            public let profile: __Name__GATTProfile
            private let state = Mutex(State())

            /// Creates a device.
            public init(profile: __Name__GATTProfile = __Name__GATTProfile()) {
                self.profile = profile
            }

            /// Bytes received since the last BEGIN.
            public var bytesReceived: Int { state.withLock { $0.received } }

            public var services: [GATTServiceDefinition] {
                [
                    GATTServiceDefinition(
                        uuid: profile.service,
                        characteristics: [
                            .init(uuid: profile.dataCharacteristic, properties: .writeWithoutResponse),
                            .init(uuid: profile.controlCharacteristic, properties: [.write, .notify]),
                        ]
                    )
                ]
            }

            public func rebooted() {
                state.withLock { $0 = State() }
            }

            public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
                switch characteristic {
                case profile.data:
                    receive(value, flash: peripheral.flash)
                    return .success
                case profile.control:
                    guard let command = __Name__Command(decoding: value) else { return .invalidPDU }
                    let reply = handle(command, flash: peripheral.flash)
                    peripheral.notify(reply.encoded, on: profile.control)
                    return .success
                default:
                    return .writeNotPermitted
                }
            }

            private func receive(_ value: Data, flash: any FlashStorage) {
                state.withLock { state in
                    guard state.receiving, !state.flashFailed else { return }
                    let offset = state.received
                    state.received += value.count
                    let end = offset + value.count
                    guard end <= state.expectedSize else { return }
                    do {
                        while state.erasedUpTo < end {
                            try flash.erase(state.erasedUpTo..<(state.erasedUpTo + flash.sectorSize))
                            state.erasedUpTo += flash.sectorSize
                        }
                        try flash.write(value, at: offset)
                    } catch {
                        state.flashFailed = true
                    }
                }
            }

            private func handle(_ command: __Name__Command, flash: any FlashStorage) -> __Name__Reply {
                state.withLock { state in
                    switch command {
                    case .begin(let size, let crc):
                        guard Int(size) <= flash.capacity else {
                            state.receiving = false
                            return .begin(.tooLarge)
                        }
                        state = State(receiving: true, expectedSize: Int(size), expectedCRC: crc)
                        return .begin(.ok)
                    case .end:
                        defer { state.receiving = false }
                        guard state.receiving, state.received == state.expectedSize, !state.flashFailed else { return .end(.badSize) }
                        let held = CRC32.checksum(flash.read(0..<state.expectedSize))
                        return .end(held == state.expectedCRC ? .ok : .badCRC)
                    }
                }
            }
        }

        """#

    static let wireTestsFile = #"""
        import Foundation
        import OTACore
        import Testing
        import __Target__

        /// The codecs against byte vectors. TODO(vendor): vectors from the vendor's documentation or a capture.
        @Suite struct __Name__WireTests {
            @Test func commandsEncodeAsDocumented() {
                #expect([UInt8](__Name__Command.begin(size: 0x0102_0304, crc: 0xAABB_CCDD).encoded) == [0x01, 0x04, 0x03, 0x02, 0x01, 0xDD, 0xCC, 0xBB, 0xAA])
                #expect([UInt8](__Name__Command.end.encoded) == [0x02])
            }

            @Test func commandsRoundTripAndShortOnesAreRefused() {
                let begin = __Name__Command.begin(size: 1000, crc: 7)
                #expect(__Name__Command(decoding: begin.encoded) == begin)
                #expect(__Name__Command(decoding: __Name__Command.end.encoded) == .end)
                #expect(__Name__Command(decoding: Data([0x01, 0x00])) == nil)
                #expect(__Name__Command(decoding: Data([0x7F])) == nil)
                #expect(__Name__Command(decoding: Data()) == nil)
            }

            @Test func repliesDecodeWithUnknownStatusesKept() {
                #expect(__Name__Reply(decoding: Data([0x81, 0x00])) == .begin(.ok))
                #expect(__Name__Reply(decoding: Data([0x82, 0x2A])) == .end(__Name__Status(rawValue: 0x2A)))
                #expect(__Name__Reply(decoding: Data([0x82])) == nil)
                #expect(__Name__Reply(decoding: Data([0x83, 0x00])) == nil)
                #expect(__Name__Reply.end(.badCRC).encoded == Data([0x82, 0x01]))
            }
        }

        """#

    static let stateMachineTestsFile = #"""
        import Foundation
        import OTACore
        import Testing
        import __Target__

        /// The state machine driven input by input, without a transport.
        @Suite struct __Name__StateMachineTests {
            private func failure(_ action: __Name__UpdateStateMachine.Action) -> OTAError? {
                if case .fail(let error) = action { return error }
                return nil
            }

            private func startedMachine() -> __Name__UpdateStateMachine {
                var machine = __Name__UpdateStateMachine(size: 1000, crc: 0xCAFE_F00D)
                _ = machine.start()
                return machine
            }

            @Test func happyPath() {
                var machine = __Name__UpdateStateMachine(size: 1000, crc: 0xCAFE_F00D)
                guard case .sendAndAwaitReply(.begin(size: 1000, crc: 0xCAFE_F00D)) = machine.start() else {
                    Issue.record("expected BEGIN")
                    return
                }
                guard case .streamImage = machine.receive(__Name__Reply.begin(.ok).encoded) else {
                    Issue.record("expected streaming")
                    return
                }
                guard case .sendAndAwaitReply(.end) = machine.streamFinished() else {
                    Issue.record("expected END")
                    return
                }
                guard case .finished = machine.receive(__Name__Reply.end(.ok).encoded) else {
                    Issue.record("expected finished")
                    return
                }
                #expect(machine.state == .done)
            }

            @Test func rejectedBeginNamesTheStatus() throws {
                var machine = startedMachine()
                let error = try #require(failure(machine.receive(__Name__Reply.begin(.tooLarge).encoded)))
                #expect(error.code == .imageTooLarge)
                #expect(error.message == "device rejected BEGIN: status 3, image too large for the update slot")
                #expect(machine.state == .failed)
            }

            @Test(arguments: [
                (__Name__Status.badCRC, OTAError.Code.verificationFailed),
                (__Name__Status.badSize, OTAError.Code.verificationFailed),
                (__Name__Status(rawValue: 0x42), OTAError.Code.deviceRejected),
            ])
            func rejectedEnd(status: __Name__Status, code: OTAError.Code) throws {
                var machine = startedMachine()
                _ = machine.receive(__Name__Reply.begin(.ok).encoded)
                _ = machine.streamFinished()
                let error = try #require(failure(machine.receive(__Name__Reply.end(status).encoded)))
                #expect(error.code == code)
                #expect(error.message.hasPrefix("device rejected END: \(status)"))
            }

            @Test func outOfTurnReplyNamesWhatWasAwaited() throws {
                var machine = startedMachine()
                let error = try #require(failure(machine.receive(__Name__Reply.end(.ok).encoded)))
                #expect(error.message == "unexpected END reply (status 0, ok) on __Name__ Control while waiting for the BEGIN reply")
            }

            @Test(arguments: [[], [0x81], [0x81, 0x00, 0x00], [0x99, 0x00], [0x82, 0x00]])
            func malformedOrOutOfTurnRepliesFail(bytes: [UInt8]) throws {
                var machine = startedMachine()
                let error = try #require(failure(machine.receive(Data(bytes))))
                #expect(error.code == .malformedResponse)
                #expect(machine.state == .failed)
            }
        }

        """#

    static let endToEndTestsFile = #"""
        import Foundation
        import OTACore
        import OTATestSupport
        import OTATransportSimulator
        import Testing
        import __Target__

        /// Whole updates of the device model in the simulator, through the engine.
        @Suite struct __Name__EndToEndTests {
            @Test(arguments: [1, 243, 244, 245, 100_000])
            func imageArrivesByteIdentical(size: Int) async throws {
                let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: __Name__DeviceModel())
                let image = try UpdateHarness.image(size: size)
                let outcome = try await harness.update(image, using: __Name__Client())
                _ = try outcome.result.get()
                #expect(harness.flashContents(size) == image.bytes)
                #expect(outcome.states.contains(.verifying))
            }

            @Test func corruptedChunkIsCaughtAtEnd() async throws {
                let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: __Name__DeviceModel())
                var faults = LinkFaults()
                faults.corruptWrites = [100]
                harness.device.faults = faults
                let error = try await harness.update(try UpdateHarness.image(size: 100_000), using: __Name__Client()).failure()
                #expect(error.code == .verificationFailed)
                #expect(error.message.hasPrefix("device rejected END: status 1, CRC mismatch"))
            }

            @Test func droppedChunkIsCaughtAtEnd() async throws {
                let harness = UpdateHarness(profile: .esp32S3MTU244TwoM, model: __Name__DeviceModel())
                var faults = LinkFaults()
                faults.dropWrites = [7]
                harness.device.faults = faults
                let error = try await harness.update(try UpdateHarness.image(size: 10_000), using: __Name__Client()).failure()
                #expect(error.code == .verificationFailed)
                #expect(error.message.hasPrefix("device rejected END: status 2, size mismatch"))
            }

            @Test func theDefaultFamilyRecognisesTheDemoDevice() throws {
                let descriptor = __Name__Protocol.descriptor
                let family = try #require(descriptor.defaultDeviceFamily(source: "test"))
                #expect(family.protocolName == "__name__")
                let demo = try #require(descriptor.demoDevices.first)
                let model = try descriptor.makeDeviceModel(demo.parameters)
                let advertisement = Advertisement(
                    name: demo.advertisedName, serviceUUIDs: model.services.map(\.uuid), manufacturerData: demo.manufacturerData, rssi: demo.rssi
                )
                #expect(family.match.matches(advertisement))
            }

            /// Fails on purpose until the template is replaced: delete it once everything it lists is done.
            @Test func replaceTheTemplateWithTheVendorProtocol() {
                Issue.record(
                    """
                    __Target__ is still the scaffold's template protocol. To do:
                    - __Name__GATTProfile: the vendor's service and characteristic UUIDs;
                    - Wire/: the vendor's commands and replies, with byte vectors in __Name__WireTests;
                    - Client/__Name__UpdateStateMachine: the vendor's exchange, tested in __Name__StateMachineTests;
                    - Client/__Name__Client: dataWrites (header, alignment, write kind) and the driver's actions;
                    - Device/__Name__DeviceModel: the firmware's behaviour, so these end-to-end tests run the real exchange;
                    - __Name__Protocol: summary, parameters, default family and demo device.
                    Then delete this test. See docs/adding-a-protocol.md.
                    """
                )
            }
        }

        """#
}
