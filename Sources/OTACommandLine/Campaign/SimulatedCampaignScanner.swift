import Foundation
import OTACore
import OTATransportSimulator

/// What a campaign's simulated device (`sim:PROFILE/N`) is heard as, and its battery: fixed by
/// its address (an FNV-1a hash of it, mixed), so `ota campaign create` selects and `ota campaign run`
/// finds the same devices, in every process and on every host.
///
/// Names are `lock-N`, `sensor-N` or `meter-N` (a third each, by the hash); RSSI −95…−40 dBm;
/// battery 5…100 %, drained as data arrives (``StandardServicesProfile``) on a profile with a
/// Battery service; a third of the devices are on a charger, gaining ``chargePerMinute`` % per
/// minute of the run's virtual time.
struct SimulatedCampaignIdentity: Sendable, Hashable {
    /// The advertised name.
    var name: String
    /// How strong it is heard, in dBm.
    var rssi: Int
    /// Its battery level when a run makes it, 0–100 %.
    var battery: Int
    /// Whether it charges while the run goes on.
    var charging: Bool

    /// Percentage points a charging device gains per minute of virtual time.
    static let chargePerMinute = 1.0

    /// Its battery level `elapsed` into a run (virtual time), 0–100 %.
    func battery(after elapsed: Duration) -> Int {
        guard charging else { return battery }
        return min(100, battery + Int((elapsed.seconds / 60 * Self.chargePerMinute).rounded(.down)))
    }

    /// The kinds of device a simulated campaign fleet has, by name.
    static let kinds = ["lock", "sensor", "meter"]

    init(address: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in address.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        // SplitMix64's finalizer: addresses that differ in a digit get unrelated fields.
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        let number = address.split(separator: "/").last.map(String.init) ?? address
        name = Self.kinds[Int(hash % 3)] + "-" + number
        rssi = -95 + Int((hash >> 8) % 56)
        battery = 5 + Int((hash >> 20) % 96)
        charging = (hash >> 40) % 3 == 0
    }
}

/// The simulated devices of a campaign to be (`--sim-fleet N`, `--sim-profile`, `--protocol`),
/// "heard" all at once like the simulated fleet: each with its name, the services its
/// protocol's firmware advertises and its RSSI (``SimulatedCampaignIdentity``).
struct SimulatedCampaignScanner: DeviceScanner {
    /// The devices' addresses.
    let addresses: [String]
    /// The services their firmware advertises.
    let services: [GATTUUID]

    /// The scanner of `--sim-fleet N` devices of `profile` running `descriptor`'s firmware.
    init(count: Int, profile: DeviceProfile, descriptor: ProtocolDescriptor) throws(OTAError) {
        addresses = SimulatedCampaignFleet.addresses(profile: profile, count: count)
        services = try descriptor.makeDeviceModel(ProtocolParameters()).services.map(\.uuid)
    }

    /// Nothing waits on it: the stream finishes before any listening window closes.
    var clock: any Clock<Duration> { RealTimeClock() }

    func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveredDevice.self, throwing: (any Error).self)
        for address in addresses {
            let identity = SimulatedCampaignIdentity(address: address)
            continuation.yield(
                DiscoveredDevice(address: address, advertisement: Advertisement(name: identity.name, serviceUUIDs: services, rssi: identity.rssi)))
        }
        continuation.finish()
        return stream
    }
}
