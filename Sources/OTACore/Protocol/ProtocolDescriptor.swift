import Foundation

/// Everything an app needs to offer one protocol: its name, what it is, the parameters it
/// reads, how to make its client and its device model, what it can do beyond updating (its
/// capabilities), and the defaults it brings (a catalog family, a demo device).
///
/// A protocol target exposes one descriptor (for example `GenericProtocol.descriptor`); the app
/// registers the descriptors of the protocols it links in a ``ProtocolRegistry`` and derives its
/// built-in catalog and demo devices from them, so nothing else in the app names the protocol.
public struct ProtocolDescriptor: Sendable {
    /// The name users pass to `--protocol`: lowercase, no spaces.
    public let name: String
    /// One line describing the protocol, for `ota protocols`.
    public let summary: String
    /// Every parameter the protocol reads, declared once, in the order they are listed.
    public let parameters: [ProtocolParameterSpec]
    /// Makes the client side from parameters, after checking them against ``parameters``.
    public let makeClient: @Sendable (ProtocolParameters) throws(OTAError) -> any UpdateProtocol
    /// Makes a fresh device side (the peripheral half), for the simulator and for test
    /// peripherals, after checking the parameters against ``parameters``.
    public let makeDeviceModel: @Sendable (ProtocolParameters) throws(OTAError) -> any DeviceModel
    /// Makes a device side that checks signatures with a key, as a real device built with that
    /// key does (``makeDeviceModel(_:trusting:)``); `nil` for a protocol without signatures.
    let makeVerifyingDeviceModel: (@Sendable (ProtocolParameters, TrustedKey) throws(OTAError) -> any DeviceModel)?
    /// The protocol's own firmware container, if it has one.
    public let containerFormat: (any FirmwareContainerFormat)?
    /// How a raw image becomes what the protocol sends, if it needs more than the bytes.
    public let rawImagePreparation: (any RawImagePreparation)?
    /// How the protocol's images are signed and checked against trusted keys; `nil` for a
    /// protocol whose images carry no signature (then `--key` does not apply).
    public let signatureVerification: (any SignatureVerification)?
    /// Parameter sets whose performance differs enough to be measured and compared separately
    /// (Nordic: PRN 0 and PRN 12); by default one set, the defaults.
    public let parameterVariants: [ProtocolParameters]
    /// The catalog family a device running this protocol's firmware belongs to unless a catalog
    /// says otherwise; `nil` when its devices cannot be recognised from the protocol alone.
    public let defaultFamily: DefaultFamily?
    /// Devices running this protocol's firmware that an app can offer for trying it without
    /// hardware (the `ota` tool's simulated fleet).
    public let demoDevices: [DemoDevice]

    /// Creates a descriptor.
    ///
    /// `makeClient` and `makeDeviceModel` are called only with parameters whose names are among
    /// `parameters` and whose values are of the declared kinds.
    public init(
        name: String,
        summary: String,
        parameters: [ProtocolParameterSpec],
        makeClient: @escaping @Sendable (ProtocolParameters) throws(OTAError) -> any UpdateProtocol,
        makeDeviceModel: @escaping @Sendable (ProtocolParameters) throws(OTAError) -> any DeviceModel,
        containerFormat: (any FirmwareContainerFormat)? = nil,
        rawImagePreparation: (any RawImagePreparation)? = nil,
        parameterVariants: [ProtocolParameters] = [[:]],
        defaultFamily: DefaultFamily? = nil,
        demoDevices: [DemoDevice] = [],
        signatureVerification: (any SignatureVerification)? = nil,
        makeVerifyingDeviceModel: (@Sendable (ProtocolParameters, TrustedKey) throws(OTAError) -> any DeviceModel)? = nil
    ) {
        precondition(Set(parameters.map(\.name)).count == parameters.count, "protocol '\(name)' declares a parameter twice")
        self.name = name
        self.summary = summary
        self.parameters = parameters
        self.makeClient = { (values) throws(OTAError) in
            _ = try values.reader(declared: parameters, protocolName: name)
            return try makeClient(values)
        }
        self.makeDeviceModel = { (values) throws(OTAError) in
            _ = try values.reader(declared: parameters, protocolName: name)
            return try makeDeviceModel(values)
        }
        self.containerFormat = containerFormat
        self.rawImagePreparation = rawImagePreparation
        self.parameterVariants = parameterVariants
        self.defaultFamily = defaultFamily
        self.demoDevices = demoDevices
        self.signatureVerification = signatureVerification
        if let makeVerifyingDeviceModel {
            self.makeVerifyingDeviceModel = { (values: ProtocolParameters, key: TrustedKey) throws(OTAError) -> any DeviceModel in
                _ = try values.reader(declared: parameters, protocolName: name)
                return try makeVerifyingDeviceModel(values, key)
            }
        } else {
            self.makeVerifyingDeviceModel = nil
        }
    }

    /// A fresh device side that, given `key`, checks signatures with it and refuses what a real
    /// device built with that key refuses (the simulator's `--sim-key`); without a key, the
    /// same as ``makeDeviceModel``.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` when the protocol's images carry no
    ///   signature, or its devices cannot check signatures of `key`'s algorithm.
    public func makeDeviceModel(_ parameters: ProtocolParameters, trusting key: TrustedKey?) throws(OTAError) -> any DeviceModel {
        guard let key else { return try makeDeviceModel(parameters) }
        guard let makeVerifyingDeviceModel else {
            throw OTAError(.invalidParameter, "a simulated \(name) device checks no signatures (its images carry none), so it cannot be given \(key)")
        }
        return try makeVerifyingDeviceModel(parameters, key)
    }

    /// Checks `values` against the declared parameters.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for an unknown name or a value out of range.
    public func validate(_ values: ProtocolParameters) throws(OTAError) {
        _ = try values.reader(declared: parameters, protocolName: name)
    }
}

extension ProtocolDescriptor {
    /// Creates the descriptor of a protocol whose parameters are read into a `configuration`
    /// (``ProtocolConfiguration``): the parameters are its declarations, and the client and the
    /// device models are made from the configuration read from them.
    ///
    /// ```swift
    /// ProtocolDescriptor(
    ///     name: "lumen", summary: "…", configuration: LumenConfiguration.self,
    ///     makeClient: { LumenClient(configuration: $0) },
    ///     makeDeviceModel: { LumenDeviceModel(profile: $0.profile) })
    /// ```
    ///
    /// - Precondition: `configuration`'s ``ProtocolConfiguration/protocolName`` is `name`, so
    ///   that its messages and the descriptor's name the same protocol.
    public init<Configuration: ProtocolConfiguration>(
        name: String,
        summary: String,
        configuration: Configuration.Type,
        makeClient: @escaping @Sendable (Configuration) throws(OTAError) -> any UpdateProtocol,
        makeDeviceModel: @escaping @Sendable (Configuration) throws(OTAError) -> any DeviceModel,
        containerFormat: (any FirmwareContainerFormat)? = nil,
        rawImagePreparation: (any RawImagePreparation)? = nil,
        parameterVariants: [ProtocolParameters] = [[:]],
        defaultFamily: DefaultFamily? = nil,
        demoDevices: [DemoDevice] = [],
        signatureVerification: (any SignatureVerification)? = nil,
        makeVerifyingDeviceModel: (@Sendable (Configuration, TrustedKey) throws(OTAError) -> any DeviceModel)? = nil
    ) {
        precondition(
            Configuration.protocolName == name, "protocol '\(name)' reads a configuration of protocol '\(Configuration.protocolName)'")
        let parameters = Configuration.parameters
        // The designated initializer checks the values against `parameters` before it calls
        // these, so the configuration reads them without checking them again.
        let read = { @Sendable (values: ProtocolParameters) throws(OTAError) -> Configuration in
            try Configuration(reading: ProtocolParameterReader(parameters: values, declared: parameters))
        }
        var makeVerifying: (@Sendable (ProtocolParameters, TrustedKey) throws(OTAError) -> any DeviceModel)?
        if let makeVerifyingDeviceModel {
            makeVerifying = { (values, key) throws(OTAError) in try makeVerifyingDeviceModel(read(values), key) }
        }
        self.init(
            name: name, summary: summary, parameters: parameters,
            makeClient: { (values) throws(OTAError) in try makeClient(read(values)) },
            makeDeviceModel: { (values) throws(OTAError) in try makeDeviceModel(read(values)) },
            containerFormat: containerFormat, rawImagePreparation: rawImagePreparation, parameterVariants: parameterVariants,
            defaultFamily: defaultFamily, demoDevices: demoDevices, signatureVerification: signatureVerification,
            makeVerifyingDeviceModel: makeVerifying
        )
    }
}

extension ProtocolDescriptor {
    /// How to recognise a device running the protocol's firmware, and how to update it: the
    /// family an app's built-in catalog holds for the protocol.
    public struct DefaultFamily: Sendable, Hashable {
        /// The family's name ("framed-ota").
        public var name: String
        /// A line about the family.
        public var summary: String?
        /// How to recognise it: usually the service of the protocol's GATT profile.
        public var match: DeviceFamily.Match
        /// The protocol's parameters for the family.
        public var parameters: ProtocolParameters
        /// Engine settings (timeouts, resume policy); `nil` leaves the defaults.
        public var configuration: UpdateConfiguration?

        /// Creates a default family.
        public init(
            name: String,
            summary: String? = nil,
            match: DeviceFamily.Match,
            parameters: ProtocolParameters = [:],
            configuration: UpdateConfiguration? = nil
        ) {
            self.name = name
            self.summary = summary
            self.match = match
            self.parameters = parameters
            self.configuration = configuration
        }
    }

    /// A device with the protocol's firmware, as an app offers it for a demonstration: what it
    /// is called, the hardware it models, and what it advertises.
    public struct DemoDevice: Sendable, Hashable {
        /// The device's name in the app ("bolt-lock", reached as `sim:bolt-lock`).
        public var name: String
        /// The name of the hardware profile it runs on ("esp32s3-mtu244-1m"); the app resolves
        /// it, so a protocol need not depend on a simulator.
        public var hardwareProfile: String
        /// Parameters of its firmware (UUIDs…).
        public var parameters: ProtocolParameters
        /// The name it advertises.
        public var advertisedName: String
        /// Manufacturer data it advertises, by company identifier.
        public var manufacturerData: [UInt16: Data]
        /// How strongly it is heard, in dBm.
        public var rssi: Int

        /// Creates a demo device.
        public init(
            name: String,
            hardwareProfile: String,
            parameters: ProtocolParameters = [:],
            advertisedName: String,
            manufacturerData: [UInt16: Data] = [:],
            rssi: Int
        ) {
            self.name = name
            self.hardwareProfile = hardwareProfile
            self.parameters = parameters
            self.advertisedName = advertisedName
            self.manufacturerData = manufacturerData
            self.rssi = rssi
        }
    }

    /// The default family as a catalog entry defined in `source`.
    public func defaultDeviceFamily(source: String) -> DeviceFamily? {
        defaultFamily.map {
            DeviceFamily(
                name: $0.name, summary: $0.summary, match: $0.match, protocolName: name, parameters: $0.parameters,
                configuration: $0.configuration, source: source
            )
        }
    }
}
