import Foundation
import OTACore

/// The MCUboot flow around the upload, as a value type: from the device's image state (and
/// whether this update already reset the device for the image), what to do next.
///
/// MCUboot's states after a test reset that reverted and after a plain upload look the same (the
/// old image confirmed in slot 0, the new one in slot 1, nothing pending), so the flow keeps
/// `resetIssued` — set by the driver when it resets the device for this image — to tell them apart.
public struct MCUmgrImageFlow: Sendable, Hashable {
    /// What the driver does next.
    public enum Step: Sendable {
        /// Upload the image into slot 1.
        case upload
        /// Slot 1 holds the image: mark it (`confirm` false: one test boot; true: permanent).
        case mark(confirm: Bool)
        /// Slot 1 is marked: reset so MCUboot swaps it in.
        case reset
        /// The image runs on a test boot: confirm it.
        case confirmRunning
        /// The device is where the mode asked; `detail` says how.
        case done(detail: String)
        /// The update cannot reach the mode's state.
        case fail(OTAError)
    }

    /// What the update ends with.
    public var mode: MCUmgrUpdateMode
    /// The image's MCUboot hash (the SHA-256 TLV).
    public var hash: Data
    /// The image's version, for messages.
    public var version: String
    /// Whether this update reset the device to boot the image.
    public var resetIssued = false

    /// A flow.
    public init(mode: MCUmgrUpdateMode, hash: Data, version: String) {
        self.mode = mode
        self.hash = hash
        self.version = version
    }

    /// The next step from the device's image state.
    public func next(after state: ImageStateResponse) -> Step {
        let primary = state.slot(0)
        let secondary = state.slot(1)
        if let primary, primary.hash == hash {
            switch mode {
            case .upload:
                return .done(detail: "the device already runs image \(version)")
            case .test, .confirm:
                if primary.confirmed { return .done(detail: "image \(version) runs, confirmed (\(state))") }
                return .confirmRunning
            }
        }
        if resetIssued {
            if let secondary, secondary.hash == hash, secondary.pending { return .reset }
            return .fail(
                OTAError(
                    .verificationFailed,
                    "the device did not keep image \(version) after the reset: MCUboot reverted it or refused to boot it (\(state)); check that the image is built for this device, boots, and is signed with the key its MCUboot trusts"
                )
            )
        }
        guard let secondary, secondary.hash == hash else { return .upload }
        switch mode {
        case .upload:
            return .done(detail: "slot 1 holds image \(version) (\(secondary))")
        case .test, .confirm:
            if secondary.pending { return .reset }
            return .mark(confirm: mode == .confirm)
        }
    }

    /// Checks the state after the upload: slot 1 must hold the image.
    public func verifyUploaded(_ state: ImageStateResponse) -> OTAError? {
        guard let secondary = state.slot(1) else {
            return OTAError(.verificationFailed, "after the upload the device lists no image in slot 1 (\(state)); the image did not land")
        }
        guard secondary.hash == hash else {
            return OTAError(
                .verificationFailed,
                "after the upload slot 1 holds hash \(Hex.bytes(secondary.hash.prefix(8)))…, not this image's \(Hex.bytes(hash.prefix(8)))… (\(state))"
            )
        }
        return nil
    }

    /// Checks the state after marking slot 1.
    public func verifyMarked(_ state: ImageStateResponse, confirm: Bool) -> OTAError? {
        guard let secondary = state.slot(1), secondary.hash == hash, secondary.pending, secondary.permanent == confirm else {
            return OTAError(
                .verificationFailed, "the device did not mark image \(version) for \(confirm ? "a permanent swap" : "a test boot") (\(state))")
        }
        return nil
    }

    /// Checks the state after confirming the running image.
    public func verifyConfirmed(_ state: ImageStateResponse) -> OTAError? {
        guard let primary = state.slot(0), primary.hash == hash, primary.confirmed else {
            return OTAError(.verificationFailed, "the device did not confirm image \(version) (\(state))")
        }
        return nil
    }
}
