import Foundation
import OTACore
import Synchronization

/// An nRF5 device running its application with the buttonless DFU service: it accepts "set
/// advertising name" and "enter bootloader", then restarts into its ``NordicBootloaderModel``,
/// which from then on answers the Secure DFU service. After an update it boots the application
/// again.
///
/// The bootloader advertises under the name the client set (or `DfuTarg`), at the application's
/// address plus one on its lowest byte (``BootloaderAddress``), or at the same address for a
/// bootloader that shares the application's bonds (`bootloaderKeepsAddress`). After a SoftDevice
/// (or SoftDevice and bootloader) it stays there, the application invalidated, until an
/// application is installed, as the nRF5 SDK bootloader does.
public final class NordicApplicationModel: DeviceModel {
    private struct State {
        var inBootloader = false
        var advertisingName = "DfuTarg"
        var switchRequested = false
    }

    /// The bootloader the device restarts into.
    public let bootloader: NordicBootloaderModel
    /// The application's own advertised name.
    public let applicationName: String
    /// Whether the bootloader advertises at the application's address (it shares its bonds)
    /// rather than the next.
    public let bootloaderKeepsAddress: Bool
    /// Whether the buttonless service takes "set advertising name" (SDK 14 on); an SDK 12/13
    /// style one answers "op code not supported" and its bootloader advertises `DfuTarg`.
    public let setsAdvertisingName: Bool
    private let state = Mutex(State())

    /// Creates a device running its application.
    public init(
        applicationName: String = "Nordic_App", bootloader: NordicBootloaderModel = NordicBootloaderModel(),
        bootloaderKeepsAddress: Bool = false, setsAdvertisingName: Bool = true
    ) {
        self.applicationName = applicationName
        self.bootloader = bootloader
        self.bootloaderKeepsAddress = bootloaderKeepsAddress
        self.setsAdvertisingName = setsAdvertisingName
    }

    /// Puts the device in its bootloader now, as a button held at reset would, advertising
    /// `advertisingName` (`DfuTarg`, or the name an earlier update set).
    public func holdInBootloader(advertisingName: String = "DfuTarg") {
        state.withLock {
            $0.inBootloader = true
            $0.advertisingName = advertisingName
        }
    }

    /// The bootloader's address and name while it runs; the application's own otherwise.
    public func advertising(hardwareAddress: String) -> AdvertisedIdentity? {
        guard isInBootloader else { return nil }
        let address = bootloaderKeepsAddress ? hardwareAddress : (BootloaderAddress.next(after: hardwareAddress) ?? hardwareAddress)
        return AdvertisedIdentity(address: address, name: advertisedName)
    }

    /// Whether the device runs its bootloader.
    public var isInBootloader: Bool { state.withLock { $0.inBootloader } }

    /// The name the device advertises now.
    public var advertisedName: String {
        state.withLock { $0.inBootloader ? $0.advertisingName : applicationName }
    }

    public var services: [GATTServiceDefinition] {
        if isInBootloader { return bootloader.services }
        return [
            GATTServiceDefinition(
                uuid: DFUGATTProfile.service,
                characteristics: [.init(uuid: DFUGATTProfile.buttonless.characteristic, properties: [.write, .indicate])]
            )
        ]
    }

    public func connected(_ peripheral: any PeripheralContext) {
        if isInBootloader { bootloader.connected(peripheral) }
    }

    public func disconnected() {
        if isInBootloader { bootloader.disconnected() }
    }

    public func rebooted() {
        let installed = bootloader.installedImage
        let (wasSwitching, installedSomething) = state.withLock { state -> (Bool, Bool) in
            defer { state.switchRequested = false }
            return (state.switchRequested, state.inBootloader && installed != nil)
        }
        // A new SoftDevice invalidates the application (its size may differ): the bootloader
        // stays in DFU mode, at the same address and under the same name, for the application
        // part that follows in a multi-part package.
        let applicationInvalidated = installed.map { $0.firmwareType == .softdevice || $0.firmwareType == .softdeviceBootloader } ?? false
        if wasSwitching {
            state.withLock { $0.inBootloader = true }
            bootloader.rebooted()
        } else if installedSomething && !applicationInvalidated {
            // The bootloader restarts into the new application.
            state.withLock { $0.inBootloader = false }
        } else if isInBootloader {
            bootloader.rebooted()
        }
    }

    public func read(_ characteristic: CharacteristicID, peripheral: any PeripheralContext) -> Result<Data, ATTStatus> {
        isInBootloader ? bootloader.read(characteristic, peripheral: peripheral) : .failure(.readNotPermitted)
    }

    public func write(_ value: Data, to characteristic: CharacteristicID, kind: WriteKind, peripheral: any PeripheralContext) -> ATTStatus {
        if isInBootloader { return bootloader.write(value, to: characteristic, kind: kind, peripheral: peripheral) }
        guard characteristic == DFUGATTProfile.buttonless, kind == .withResponse else { return .writeNotPermitted }
        guard peripheral.isSubscribed(to: characteristic) else { return .cccdImproperlyConfigured }
        guard let request = ButtonlessRequest(decoding: value) else {
            peripheral.notify(Data([0x20, value.first ?? 0, 0x02]), on: characteristic)
            return .success
        }
        switch request {
        case .setAdvertisingName where !setsAdvertisingName:
            peripheral.notify(Data([0x20, 0x02, 0x02]), on: characteristic)
        case .setAdvertisingName(let name):
            state.withLock { $0.advertisingName = name }
            peripheral.notify(Data([0x20, 0x02, 0x01]), on: characteristic)
        case .enterBootloader:
            state.withLock { $0.switchRequested = true }
            peripheral.notify(Data([0x20, 0x01, 0x01]), on: characteristic)
            peripheral.reboot(after: .milliseconds(100))
        }
        return .success
    }
}
