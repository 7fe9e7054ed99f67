// lumen-ota: the `ota` tool plus the Lumen vendor protocol, its catalog family and a simulated
// bulb — wired in here, with no change to OTACore or to the ota tool's own sources.
//
//     swift run lumen-ota scan
//     swift run lumen-ota update Examples/firmware/sample-app.bin --device sim:lumen-bulb
import LumenOTAProtocol
import OTACommandLine
import OTACore
import OTATransportSimulator

var environment = ToolEnvironment.standard
environment.registry.register(LumenProtocol.descriptor)
environment.builtInCatalogs.append((
    source: "lumen catalog",
    json: """
        {"catalog": 1, "families": [
          {"name": "lumen-bulb", "summary": "Lumen smart bulbs", "match": {"name": "Lumen-*", "services": ["\(LumenProtocol.service)"]},
           "protocol": "lumen", "timeouts": {"response": 5}}
        ]}
        """
))
environment.fleet.append(
    SimulatedFleetDevice(name: "lumen-bulb", profile: .esp32MTU185, firmwareProtocol: "lumen", advertisedName: "Lumen-A19-3C", rssi: -60)
)
await CommandLineTool.main(environment: environment)
