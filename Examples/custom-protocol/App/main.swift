// lumen-ota: the `ota` tool plus the Lumen vendor protocol — registered here with one line, with
// no change to OTACore or to the ota tool's own sources. Its catalog family and its simulated bulb
// come from the protocol's descriptor.
//
//     swift run lumen-ota scan
//     swift run lumen-ota update Examples/firmware/sample-app.bin --device sim:lumen-bulb
import LumenOTAProtocol
import OTACommandLine
import OTACore

var environment = ToolEnvironment.standard
environment.registry.register(LumenProtocol.descriptor)
await CommandLineTool.main(environment: environment)
