import Foundation

/// A protocol's own firmware container (a Nordic DFU `.zip`): read into the images to send, and
/// described with its consistency checked. A protocol that sends raw images has none.
public protocol FirmwareContainerFormat: Sendable {
    /// The images to send, in transfer order, each with its attachments; `nil` when the file is
    /// not a container of this format (the caller then sends it as a raw image).
    ///
    /// - Throws: ``OTAError`` when the file is such a container but unusable.
    func load(_ url: URL) throws(OTAError) -> [FirmwareImage]?

    /// What the container holds and whether it is consistent; `nil` when the file is not a
    /// container of this format.
    func inspect(_ url: URL) throws(OTAError) -> FirmwareInspection?

    /// The images of a container already in memory (a package's verified image), as
    /// ``load(_:)``; `nil` when `bytes` are not a container of this format. Default: `nil`.
    func load(_ bytes: Data, name: String) throws(OTAError) -> [FirmwareImage]?
}

extension FirmwareContainerFormat {
    /// Not a container: bytes in memory are sent as they are.
    public func load(_ bytes: Data, name: String) throws(OTAError) -> [FirmwareImage]? { nil }
}

/// Turns a raw image into what the protocol sends, the way the vendor's tooling would (Nordic:
/// adds an unsigned init packet), for measurements and tests that start from bare bytes. A
/// protocol without it sends raw images as they are.
public protocol RawImagePreparation: Sendable {
    /// The image as the protocol sends it.
    func prepare(_ image: FirmwareImage) throws(OTAError) -> FirmwareImage
}
