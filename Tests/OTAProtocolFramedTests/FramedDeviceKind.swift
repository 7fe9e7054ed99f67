import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
import Testing

/// The device implementations every end-to-end test runs against: the Swift device model, the
/// portable C reference firmware (both speak version 2), and the Swift model as a version-1-only
/// device, which the client must fall back for.
enum FramedDeviceKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case swift
    case c
    case swiftVersion1 = "swift-v1"

    func makeModel() -> any DeviceModel {
        switch self {
        case .swift: FramedDeviceModel()
        case .c: FramedReferenceDevice()
        case .swiftVersion1: FramedDeviceModel(highestVersion: 1)
        }
    }

    var testDescription: String { rawValue }

    /// A harness with a fresh device of this kind.
    func harness(_ profile: DeviceProfile = .esp32S3MTU244TwoM, seed: UInt64 = 1) -> UpdateHarness {
        UpdateHarness(profile: profile, model: makeModel(), seed: seed)
    }
}
