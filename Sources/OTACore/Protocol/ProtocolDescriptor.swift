import Foundation

/// Everything the app needs to offer one protocol: its name, what it is, and how to make its
/// client and its device model.
///
/// A protocol target exposes one descriptor (for example `GenericProtocol.descriptor`); the app
/// registers the descriptors of the protocols it links in a ``ProtocolRegistry``.
public struct ProtocolDescriptor: Sendable {
    /// The name users pass to `--protocol`: lowercase, no spaces.
    public let name: String
    /// One line describing the protocol, for `ota protocols`.
    public let summary: String
    /// The parameter names the protocol reads, with a line each.
    public let parameters: [(name: String, summary: String)]
    /// Makes the client side from parameters.
    public let makeClient: @Sendable (ProtocolParameters) throws(OTAError) -> any UpdateProtocol
    /// Makes a fresh device side (the peripheral half), for the simulator and for test
    /// peripherals.
    public let makeDeviceModel: @Sendable (ProtocolParameters) throws(OTAError) -> any DeviceModel
    /// Reads the protocol's own firmware container (a Nordic DFU `.zip`) into the images to send,
    /// in transfer order, each with its attachments; `nil` for protocols that send raw images.
    /// It returns `nil` for a file that is not such a container.
    public let loadFirmware: (@Sendable (URL) throws(OTAError) -> [FirmwareImage]?)?
    /// Describes a firmware container for `ota inspect`: what is inside and whether it is
    /// consistent; `nil` when the protocol has no container format or the file is not one.
    public let inspectFirmware: (@Sendable (URL) throws(OTAError) -> FirmwareInspection?)?
    /// Turns a raw image into what the protocol sends, the way the vendor's tooling would (Nordic:
    /// adds an unsigned init packet); used by the benchmark and tests. `nil`: raw images as they are.
    public let prepareRawImage: (@Sendable (FirmwareImage) throws(OTAError) -> FirmwareImage)?
    /// Parameter sets the benchmark measures separately (Nordic: PRN 0 and PRN 12); by default one
    /// run with the defaults.
    public let benchmarkVariants: [ProtocolParameters]

    /// Creates a descriptor.
    public init(
        name: String,
        summary: String,
        parameters: [(name: String, summary: String)],
        makeClient: @escaping @Sendable (ProtocolParameters) throws(OTAError) -> any UpdateProtocol,
        makeDeviceModel: @escaping @Sendable (ProtocolParameters) throws(OTAError) -> any DeviceModel,
        loadFirmware: (@Sendable (URL) throws(OTAError) -> [FirmwareImage]?)? = nil,
        inspectFirmware: (@Sendable (URL) throws(OTAError) -> FirmwareInspection?)? = nil,
        prepareRawImage: (@Sendable (FirmwareImage) throws(OTAError) -> FirmwareImage)? = nil,
        benchmarkVariants: [ProtocolParameters] = [[:]]
    ) {
        self.name = name
        self.summary = summary
        self.parameters = parameters
        self.makeClient = makeClient
        self.makeDeviceModel = makeDeviceModel
        self.loadFirmware = loadFirmware
        self.inspectFirmware = inspectFirmware
        self.prepareRawImage = prepareRawImage
        self.benchmarkVariants = benchmarkVariants
    }
}
