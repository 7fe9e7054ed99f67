// swift-tools-version: 6.0
// The Swift framework for updating device firmware over Bluetooth LE.
//
// Dependency direction: OTACore depends on the toolchain and zlib only; each protocol and each
// transport depends only on OTACore; the `ota` tool wires them together.
import PackageDescription

/// Every test target's settings: the language as an app that uses the package would have it.
let testSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

/// Every source target's settings: the tests', and nonisolated async functions run on their
/// caller's executor (SE-0461's `nonisolated(nonsending)` default; decision 0067). Without it each call into one hops to the generic
/// executor and back: four to nine task switches per data write, each asking the task for its
/// executor preference under the task's status lock. Public entry points that run a whole update
/// are `@concurrent`, so an app's actor never runs the engine's synchronous work.
let strictSettings: [SwiftSetting] =
    testSettings + [
        .enableUpcomingFeature("NonisolatedNonsendingByDefault")
    ]

/// BlueZ exists only on Linux: its target compiles to nothing elsewhere, and nothing depends on it
/// there, so the package builds on macOS without D-Bus.
let blueZ: Target.Dependency = .target(name: "OTATransportBlueZ", condition: .when(platforms: [.linux]))

/// CoreBluetooth exists only on Apple platforms; on Linux the CoreBluetooth transport compiles
/// against a stand-in with the same Swift surface, backed by the simulator
/// (docs/decisions/0018-corebluetooth-transport.md). Apple builds never link the stand-in.
let coreBluetoothStandIn: Target.Dependency = .target(name: "CoreBluetoothStandIn", condition: .when(platforms: [.linux]))

let package = Package(
    name: "swift-ble-ota",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "OTACore", targets: ["OTACore"]),
        .library(name: "OTATrust", targets: ["OTATrust"]),
        .library(name: "OTAProtocolGeneric", targets: ["OTAProtocolGeneric"]),
        .library(name: "OTAProtocolFramed", targets: ["OTAProtocolFramed"]),
        .library(name: "OTAProtocolNordicDFU", targets: ["OTAProtocolNordicDFU"]),
        .library(name: "OTAProtocolMCUmgr", targets: ["OTAProtocolMCUmgr"]),
        .library(name: "OTAProtocolEspressif", targets: ["OTAProtocolEspressif"]),
        .library(name: "OTATransportSimulator", targets: ["OTATransportSimulator"]),
        .library(name: "OTATransportBlueZ", targets: ["OTATransportBlueZ"]),
        .library(name: "OTATransportCoreBluetooth", targets: ["OTATransportCoreBluetooth"]),
        .library(name: "OTATransportUDP", targets: ["OTATransportUDP"]),
        .library(name: "OTATransportSerial", targets: ["OTATransportSerial"]),
        .library(name: "OTAStoreSQLite", targets: ["OTAStoreSQLite"]),
        .library(name: "OTAStorePostgreSQL", targets: ["OTAStorePostgreSQL"]),
        // The command line as a library: the fuzz package checks argument vectors through it.
        .library(name: "OTACommandLine", targets: ["OTACommandLine"]),
        .executable(name: "ota", targets: ["ota"]),
        .executable(name: "ota-peripheral", targets: ["ota-peripheral"]),
    ],
    targets: [
        // C system libraries.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),

        // OpenSSL's libcrypto, for checking firmware signatures on Linux (CryptoKit elsewhere).
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]
        ),

        // SQLite, for a campaign's state on one gateway.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),

        // libpq, PostgreSQL's client library, for a campaign shared by several gateways.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),

        // CRC-32 and SHA-256 with the CPU's own instructions where it has them (x86-64), for
        // OTACore's CRC32 and SHA256 (decisions 0060, 0061).
        .target(name: "CChecksum"),

        // The engine and its abstractions: no vendor protocol, no platform Bluetooth API.
        .target(name: "OTACore", dependencies: ["CChecksum", "CZlib"], swiftSettings: strictSettings),

        // Signature checks against keys the user trusts: key files, ECDSA P-256 and Ed25519.
        .target(
            name: "OTATrust",
            dependencies: ["OTACore", .target(name: "CCrypto", condition: .when(platforms: [.linux]))],
            swiftSettings: strictSettings
        ),

        // Update protocols (plug-ins), each its own target.
        .target(name: "OTAProtocolGeneric", dependencies: ["OTACore"], swiftSettings: strictSettings),
        .target(name: "OTAProtocolFramed", dependencies: ["OTACore"], swiftSettings: strictSettings),
        .target(name: "OTAProtocolNordicDFU", dependencies: ["OTACore", "OTATrust", "CZlib"], swiftSettings: strictSettings),
        .target(name: "OTAProtocolMCUmgr", dependencies: ["OTACore", "OTATrust"], swiftSettings: strictSettings),
        .target(name: "OTAProtocolEspressif", dependencies: ["OTACore", "CChecksum"], swiftSettings: strictSettings),

        // Transports.
        .target(name: "OTATransportSimulator", dependencies: ["OTACore"], swiftSettings: strictSettings),
        // BlueZ over D-Bus, Linux only: libdbus (libdbus-1.so.3) is loaded when a BlueZ command runs,
        // so building needs no D-Bus headers (docs/decisions/0009-libdbus-at-run-time.md).
        .target(name: "OTATransportBlueZ", dependencies: ["OTACore"], swiftSettings: strictSettings),
        // CoreBluetooth for iOS and macOS apps; on Linux it builds against the stand-in below.
        .target(name: "OTATransportCoreBluetooth", dependencies: ["OTACore", coreBluetoothStandIn], swiftSettings: strictSettings),
        // What the UDP and serial transports share: a protocol's packets over a file descriptor
        // read on a thread of its own, shown as one characteristic, and a device model served
        // that way (docs/decisions/0030-packet-link.md).
        .target(name: "OTATransportPacketLink", dependencies: ["OTACore"], swiftSettings: strictSettings),
        // Datagrams, one protocol packet each (SMP over UDP, `udp:HOST[:PORT]`), and a server that
        // serves a device model that way (docs/decisions/0026-smp-over-udp-and-image-commands.md).
        .target(name: "OTATransportUDP", dependencies: ["OTACore", "OTATransportPacketLink"], swiftSettings: strictSettings),
        // A protocol's packets on a serial line (SMP's console framing, `serial:/dev/ttyACM0`),
        // framed as the protocol says; a server for a device model on a pseudo-terminal.
        .target(name: "OTATransportSerial", dependencies: ["OTACore", "OTATransportPacketLink"], swiftSettings: strictSettings),
        // A test double with CoreBluetooth's Swift surface, whose peripherals are simulated devices.
        .target(name: "CoreBluetoothStandIn", dependencies: ["OTACore", "OTATransportSimulator"], swiftSettings: strictSettings),

        // The command-line tool: a library with everything testable, and a thin executable.
        .target(
            name: "OTACommandLine",
            dependencies: [
                "OTACore", "OTATrust", "OTAProtocolGeneric", "OTAProtocolFramed", "OTAProtocolNordicDFU", "OTAProtocolMCUmgr",
                "OTAProtocolEspressif", "OTATransportSimulator", "OTATransportUDP", "OTATransportSerial", "OTAStoreSQLite", "OTAStorePostgreSQL",
                blueZ,
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(name: "ota", dependencies: ["OTACommandLine"], swiftSettings: strictSettings),
        // Serves a protocol's device model as a real GATT peripheral through BlueZ, for the
        // real-stack tests and demos (Linux only: elsewhere it says so and exits).
        .executableTarget(
            name: "ota-peripheral",
            dependencies: [
                "OTACommandLine", "OTACore", "OTAProtocolNordicDFU", "OTAProtocolMCUmgr", "OTATransportUDP", "OTATransportSerial", blueZ,
            ],
            swiftSettings: strictSettings
        ),

        // A fleet campaign's state in one SQLite file (one gateway, no server).
        .target(name: "OTAStoreSQLite", dependencies: ["OTACore", "CSQLite"], swiftSettings: strictSettings),
        // A fleet campaign's state in a PostgreSQL database, shared by several gateways (leases
        // claimed with FOR UPDATE SKIP LOCKED).
        .target(name: "OTAStorePostgreSQL", dependencies: ["OTACore", "CLibPQ"], swiftSettings: strictSettings),

        // Shared test support: a harness that updates a simulated device and collects events.
        .target(
            name: "OTATestSupport",
            dependencies: ["OTACore", "OTATransportSimulator"],
            swiftSettings: strictSettings
        ),

        // Examples.
        .executableTarget(
            name: "simulated-update",
            dependencies: ["OTACore", "OTAProtocolGeneric", "OTATransportSimulator"],
            path: "Examples/simulated-update",
            swiftSettings: strictSettings
        ),

        // The framed protocol's device side in portable C (the firmware reference), compiled on the
        // host so the tests can run the Swift client against it. The ESP-IDF glue beside it is not
        // part of the host build.
        .target(
            name: "CFramedReferenceDevice",
            path: "Examples/framed-reference-device/core"
        ),

        // A vendor protocol added as its own target, with its own device model and tests, wired
        // into an app (lumen-ota) without touching OTACore: see docs/adding-a-protocol.md.
        .target(
            name: "LumenOTAProtocol",
            dependencies: ["OTACore"],
            path: "Examples/custom-protocol/Sources/LumenOTAProtocol",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "lumen-ota",
            dependencies: ["LumenOTAProtocol", "OTACommandLine", "OTACore", "OTATransportSimulator"],
            path: "Examples/custom-protocol/App",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LumenOTAProtocolTests",
            dependencies: ["LumenOTAProtocol", "OTACore", "OTATestSupport", "OTATransportSimulator"],
            path: "Examples/custom-protocol/Tests/LumenOTAProtocolTests",
            swiftSettings: testSettings
        ),

        // An app-shaped example: a view model driving an update over CoreBluetooth (the SwiftUI view
        // compiles only where SwiftUI exists; the logic is tested on Linux).
        .target(
            name: "CoreBluetoothAppExample",
            dependencies: ["OTACore", "OTATransportCoreBluetooth"],
            path: "Examples/corebluetooth-app/Sources",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CoreBluetoothAppExampleTests",
            dependencies: [
                "CoreBluetoothAppExample", "OTACore", "OTAProtocolFramed", "OTATransportCoreBluetooth", "OTATransportSimulator",
                coreBluetoothStandIn,
            ],
            path: "Examples/corebluetooth-app/Tests",
            swiftSettings: testSettings
        ),

        // Package plugins.
        .plugin(
            name: "ScaffoldProtocol",
            capability: .command(
                intent: .custom(verb: "scaffold-protocol", description: "Create a new vendor protocol target with a client, a device model and tests"),
                permissions: [.writeToPackageDirectory(reason: "creates Sources/OTAProtocolNAME and Tests/OTAProtocolNAMETests")]
            )
        ),

        // Tests.
        .testTarget(name: "OTACoreTests", dependencies: ["OTACore"], swiftSettings: testSettings),
        .testTarget(
            name: "OTATransportSimulatorTests",
            dependencies: ["OTACore", "OTATransportSimulator", "OTATestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAProtocolGenericTests",
            dependencies: ["OTACore", "OTAProtocolGeneric", "OTATransportSimulator", "OTATestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAProtocolFramedTests",
            dependencies: ["OTACore", "OTAProtocolFramed", "OTATransportSimulator", "OTATestSupport", "CFramedReferenceDevice"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAProtocolNordicDFUTests",
            dependencies: ["OTACore", "OTAProtocolNordicDFU", "OTATransportSimulator", "OTATestSupport", "CZlib"],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAProtocolMCUmgrTests",
            dependencies: ["OTACore", "OTAProtocolMCUmgr", "OTATransportSimulator", "OTATestSupport"],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
        // The cross-protocol fault campaign: 1,000 seeded updates, each protocol one table entry.
        .testTarget(
            name: "OTAFleetTests",
            dependencies: ["OTACore", "OTATransportSimulator", "OTAProtocolGeneric"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAFaultCampaignTests",
            dependencies: [
                "OTACore", "OTATransportSimulator", "OTATestSupport", "OTAProtocolGeneric", "OTAProtocolFramed", "OTAProtocolNordicDFU",
                "OTAProtocolMCUmgr",
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAProtocolEspressifTests",
            dependencies: ["OTAProtocolEspressif", "OTACore", "OTATestSupport", "OTATransportSimulator"],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTATransportCoreBluetoothTests",
            dependencies: [
                "OTACore", "OTATransportCoreBluetooth", "OTATransportSimulator", "OTAProtocolGeneric", "OTAProtocolFramed",
                "OTAProtocolNordicDFU", "OTAProtocolMCUmgr", "OTATestSupport", coreBluetoothStandIn,
            ],
            // A copy of shared/protocols/corebluetooth-api.md, read by StandInSignatureTests.
            exclude: ["corebluetooth-api.md"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTATransportBlueZTests",
            dependencies: ["OTACore", blueZ, "OTATestSupport", "OTATransportSimulator"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTATransportPacketLinkTests",
            dependencies: ["OTACore", "OTATransportPacketLink"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTATransportUDPTests",
            dependencies: ["OTACore", "OTATransportUDP", "OTATransportSerial", "OTAProtocolMCUmgr", "OTATestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTAStoreSQLiteTests",
            dependencies: ["OTAStoreSQLite", "OTACore", "OTATransportSimulator", "OTAProtocolGeneric"],
            swiftSettings: testSettings
        ),
        // Against a private PostgreSQL cluster each test starts (skipped without the server's binaries).
        .testTarget(
            name: "OTAStorePostgreSQLTests",
            dependencies: ["OTAStorePostgreSQL", "OTACore", "OTATestSupport", "OTATransportSimulator", "OTAProtocolGeneric"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTATransportSerialTests",
            dependencies: ["OTACore", "OTATransportSerial", "OTAProtocolMCUmgr"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OTACommandLineTests",
            dependencies: [
                "OTACommandLine", "OTACore", "OTAProtocolMCUmgr", "OTAProtocolNordicDFU", "OTATransportUDP", "OTATransportSerial", "OTAStoreSQLite",
                "OTATestSupport",
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: testSettings
        ),
    ]
)
