import Foundation
import OTACore
import OTAProtocolGeneric
import OTATestSupport
import OTATransportSimulator

/// A simulated device running the generic protocol's firmware model.
struct GenericHarness {
    var base: UpdateHarness
    let model: GenericDeviceModel

    init(profile: DeviceProfile, seed: UInt64 = 1, behavior: GenericDeviceModel.Behavior = .init()) {
        model = GenericDeviceModel(behavior: behavior)
        base = UpdateHarness(profile: profile, model: model, seed: seed)
    }

    var simulation: Simulation { base.simulation }
    var device: SimulatedDevice { base.device }
    var configuration: UpdateConfiguration {
        get { base.configuration }
        set { base.configuration = newValue }
    }

    typealias Outcome = UpdateHarness.Outcome

    static func image(size: Int, seed: UInt64 = 7) throws -> FirmwareImage {
        try UpdateHarness.image(size: size, seed: seed)
    }

    func update(_ image: FirmwareImage, connector: (any Connector)? = nil) async throws -> Outcome {
        try await base.update(image, using: GenericClient(), connector: connector)
    }
}
