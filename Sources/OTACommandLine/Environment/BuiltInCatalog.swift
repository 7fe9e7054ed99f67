/// The device catalog built into `ota`: one family per shipped protocol, recognised by the
/// protocol's advertised service. Schema: docs/manifest.md.
enum BuiltInCatalog {
    static let source = "built-in catalog"

    static let json = """
        {
          "catalog": 1,
          "families": [
            {
              "name": "generic-ota",
              "summary": "Firmware with the generic OTA service (seed ESP-IDF example)",
              "match": { "services": ["4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001"] },
              "protocol": "generic"
            },
            {
              "name": "framed-ota",
              "summary": "Firmware with the framed resumable OTA service",
              "match": { "services": ["4f544200-8a2e-4c1b-9f3d-2b7e5c6a0001"] },
              "protocol": "framed",
              "parameters": { "batch": 16, "window": 3 },
              "resume": { "attempts": 5 }
            },
            {
              "name": "nordic-secure-dfu",
              "summary": "nRF5 SDK secure bootloader (or an application with buttonless DFU)",
              "match": { "services": ["FE59"] },
              "protocol": "nordic-dfu",
              "parameters": { "prn": 12 },
              "timeouts": { "verify": 60 }
            }
          ]
        }
        """
}
