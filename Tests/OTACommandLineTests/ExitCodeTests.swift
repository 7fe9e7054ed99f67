import OTACore
import Testing

@testable import OTACommandLine

@Suite struct ExitCodeTests {
    @Test(arguments: [
        (OTAError.Code.deviceRejected, ExitCode.updateFailed),
        (.verificationFailed, .updateFailed),
        (.malformedResponse, .updateFailed),
        (.unknownProtocol, .usage),
        (.invalidImage, .badInput),
        (.imageTooLarge, .badInput),
        (.connectionFailed, .deviceUnavailable),
        (.missingCharacteristic, .deviceUnavailable),
        (.deviceNotReady, .deviceUnavailable),
        (.disconnected, .linkFailed),
        (.timeout, .linkFailed),
        (.stalled, .linkFailed),
        (.cancelled, .interrupted),
        (.internal, .internalError),
    ])
    func mapping(code: OTAError.Code, exit: ExitCode) {
        #expect(ExitCode.forError(OTAError(code, "x")) == exit)
    }
}
