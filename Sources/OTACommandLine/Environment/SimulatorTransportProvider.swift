import Foundation
import OTACore
import OTATransportSimulator

/// The simulator as a ``TransportProvider``: `sim:NAME` reaches a device of the simulated fleet
/// or a bare hardware profile, in a deterministic simulation on a virtual clock.
///
/// It lives in the tool rather than in OTATransportSimulator because what it serves are the
/// tool's notions: the named fleet (``SimulatedFleetDevice``), the `--sim-*` options, and device
/// models built from the linked protocols.
///
/// Options it reads from ``TransportOptions``: `--seed`, `--sim-speed`, `--sim-disconnect-at`,
/// `--sim-reboot-at`, `--sim-state` (see `ota update --help`).
public struct SimulatorTransportProvider: TransportProvider {
    /// The protocols whose device models simulated devices run.
    public var registry: ProtocolRegistry
    /// The named devices `ota scan` lists and `sim:NAME` reaches (besides bare profiles).
    public var fleet: [SimulatedFleetDevice]

    /// Creates the provider.
    public init(registry: ProtocolRegistry, fleet: [SimulatedFleetDevice]) {
        self.registry = registry
        self.fleet = fleet
    }

    /// `sim`.
    public var name: String { "sim" }

    /// "a simulated device (sim:NAME)". No hint of its own: the usage error that quotes it ends
    /// with one, and the command's --help points at 'ota scan' and 'ota devices'.
    public var addressForm: String { "a simulated device (sim:NAME)" }

    /// Whether `address` starts with `sim:`, or `replay:` (a recorded update, replayed in the
    /// simulator; see ``ReplayDevice``).
    public func recognises(_ address: String) -> Bool {
        address.hasPrefix("sim:") || address.hasPrefix(ReplayDevice.scheme)
    }

    /// The fleet device or profile `address` names, with this run's `--sim-*` settings.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for an unknown name or a bad option; its
    ///   ``OTAError/underlying`` is the usage error with the help to point at.
    public func device(at address: String, options: TransportOptions) throws(OTAError) -> any TransportDevice {
        if address.hasPrefix(ReplayDevice.scheme) { return try ReplayDevice(address: address) }
        do throws(UsageError) {
            let settings = try SimulatorOptions.parse(options.values, command: nil, interactive: options.isInteractive)
            return try SimulatedTarget.resolve(address, fleet: fleet, registry: registry, options: settings)
        } catch {
            throw OTAError(.invalidParameter, error.message, underlying: error)
        }
    }

    /// Lists the fleet, each device with what its firmware advertises; with `--sim-fleet N`
    /// (`ota campaign create`), the N devices of a campaign to be instead: `sim:PROFILE/1…N` of
    /// `--sim-profile` running `--protocol`'s firmware, each with its own name and RSSI.
    ///
    /// - Throws: ``OTAError/Code/invalidParameter`` for a bad `--sim-fleet`, profile or protocol.
    public func scanner(options: TransportOptions) throws(OTAError) -> any DeviceScanner {
        guard let countText = options.value("--sim-fleet") else { return SimulatedFleetScanner(provider: self) }
        guard let count = Int(countText), (1...10_000).contains(count) else {
            throw OTAError(.invalidParameter, "--sim-fleet '\(MessageText.name(countText))' is not a whole number in 1...10000")
        }
        let profile = try DeviceProfile.named(options.value("--sim-profile") ?? SimulatedCampaignFleet.defaultProfile)
        let descriptor = try registry.descriptor(named: options.value("--protocol") ?? "")
        return try SimulatedCampaignScanner(count: count, profile: profile, descriptor: descriptor)
    }
}

/// The simulated fleet, "heard" all at once: the stream yields every device and finishes.
struct SimulatedFleetScanner: DeviceScanner {
    let provider: SimulatorTransportProvider

    /// Nothing waits on it: the stream finishes before any listening window closes.
    var clock: any Clock<Duration> { RealTimeClock() }

    func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveredDevice.self, throwing: (any Error).self)
        for device in provider.fleet {
            let target = SimulatedTarget(address: "sim:\(device.name)", profile: device.profile, fleetDevice: device, registry: provider.registry)
            guard let advertisement = try? target.advertisement(chosenProtocol: nil) else {
                continue  // firmware of a protocol this build does not link
            }
            continuation.yield(DiscoveredDevice(address: target.address, advertisement: advertisement))
        }
        continuation.finish()
        return stream
    }
}
