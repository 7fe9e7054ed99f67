import OTACore
import OTAProtocolFramed
import OTATestSupport
import OTATransportSimulator
import Testing

/// The device implementations every end-to-end test runs against: the Swift device model and
/// the portable C reference firmware.
enum FramedDeviceKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case swift
    case c

    func makeModel() -> any DeviceModel {
        switch self {
        case .swift: FramedDeviceModel()
        case .c: FramedReferenceDevice()
        }
    }

    var testDescription: String { rawValue }

    /// A harness with a fresh device of this kind.
    func harness(_ profile: DeviceProfile = .esp32S3MTU244TwoM, seed: UInt64 = 1) -> UpdateHarness {
        UpdateHarness(profile: profile, model: makeModel(), seed: seed)
    }
}
