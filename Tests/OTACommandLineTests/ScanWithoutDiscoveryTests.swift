import Foundation
import Testing

@testable import OTACommandLine

/// `ota scan` over a transport without discovery (SMP over UDP or a serial line) lists nothing,
/// and says in one line how to name such a device instead; asking is not an error.
@Suite struct ScanWithoutDiscoveryTests {
    @Test(arguments: [
        (
            "udp",
            "ota scan: udp has no discovery (its devices do not advertise): pass --device udp:HOST[:PORT] to update, image list|test|confirm|erase and reset\n"
        ),
        (
            "serial",
            "ota scan: serial has no discovery (its devices do not advertise): pass --device serial:PATH[@BAUD] to update, image list|test|confirm|erase and reset\n"
        ),
    ])
    func aTransportWithoutDiscoverySaysHowToNameADevice(transport: String, line: String) async {
        for json in [false, true] {
            let streams = CapturedStreams()
            let code = await CommandLineTool.run(["scan", "--transport", transport] + (json ? ["--json"] : []), streams: streams, environment: .standard)
            #expect(code == 0)
            #expect(streams.standardOutput.isEmpty, "nothing to list: standard output stays empty for scripts")
            #expect(streams.standardError == line)
        }
    }

    @Test func theSimulatedFleetPrintsNoSuchLine() async {
        let streams = CapturedStreams()
        let code = await CommandLineTool.run(["scan"], streams: streams, environment: .standard)
        #expect(code == 0)
        #expect(!streams.standardOutput.isEmpty)
        #expect(!streams.standardError.contains("has no discovery"))
    }
}
