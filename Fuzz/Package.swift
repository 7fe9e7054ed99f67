// swift-tools-version: 6.0
// libFuzzer targets for every parser of outside input (docs/fuzzing.md, decision 0019).
//
// A package of its own, depending on the root package by path, so that the main build and
// `swift test` never see the fuzzer flags. Build and run everything with `Fuzz/run.sh SECONDS`;
// a target is one executable with one `LLVMFuzzerTestOneInput`, built with
// `-sanitize=fuzzer,address`; its `main` hands its test function to libFuzzer's driver.
import PackageDescription

/// The fuzz targets: name (also the corpus folder, Corpus/<name>) and the root-package products
/// it reaches.
let fuzzTargets: [(name: String, products: [String])] = [
    ("dfu-zip", ["OTACore", "OTAProtocolNordicDFU"]),
    ("init-packet", ["OTACore", "OTAProtocolNordicDFU"]),
    ("dfu-manifest", ["OTACore", "OTAProtocolNordicDFU"]),
    ("package-manifest", ["OTACore"]),
    ("device-catalog", ["OTACore", "OTAProtocolGeneric", "OTAProtocolFramed", "OTAProtocolNordicDFU"]),
    ("device-information", ["OTACore"]),
    ("generic-wire", ["OTAProtocolGeneric"]),
    ("framed-wire", ["OTAProtocolFramed"]),
    ("nordic-wire", ["OTAProtocolNordicDFU"]),
    ("cbor", ["OTAProtocolMCUmgr"]),
    ("smp", ["OTAProtocolMCUmgr"]),
    ("smp-serial", ["OTAProtocolMCUmgr"]),
    ("mcuboot-image", ["OTAProtocolMCUmgr"]),
    ("trace", ["OTACore", "OTATransportSimulator"]),
    ("esp-app-image", ["OTAProtocolEspressif"]),
    ("espressif-wire", ["OTAProtocolEspressif"]),
    ("trusted-key", ["OTACore", "OTATrust"]),
    ("sim-journal", ["OTACore", "OTATransportSimulator"]),
    ("sim-device-state", ["OTACore", "OTAProtocolMCUmgr", "OTAProtocolNordicDFU"]),
    ("campaign-window", ["OTACore"]),
    ("target-list", ["OTACore"]),
    ("target-pattern", ["OTACore"]),
    ("cli-arguments", ["OTACommandLine"]),
]

let package = Package(
    name: "swift-ble-ota-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "swift-ble-ota", path: "..")],
    targets: [
        .target(name: "CFuzzerDriver", path: "Sources/CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"], path: "Sources/FuzzSupport"),
    ]
        + fuzzTargets.map { target in
            .executableTarget(
                name: "fuzz-\(target.name)",
                dependencies: ["FuzzSupport"] + target.products.map { .product(name: $0, package: "swift-ble-ota") },
                path: "Sources/\(target.name)"
            )
        }
        + [
            // Writes the wire seeds of Corpus/ with the real encoders (make-corpus.sh runs it).
            .executableTarget(
                name: "fuzz-seeds",
                dependencies: [
                    "OTACore", "OTAProtocolGeneric", "OTAProtocolFramed", "OTAProtocolNordicDFU", "OTAProtocolMCUmgr", "OTAProtocolEspressif",
                    "OTATransportSimulator",
                ].map {
                    .product(name: $0, package: "swift-ble-ota")
                },
                path: "Sources/seeds"
            )
        ]
)
