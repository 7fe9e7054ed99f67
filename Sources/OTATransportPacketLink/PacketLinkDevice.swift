import OTACore

/// A device named by its address on a packet link (`serial:/dev/ttyACM0`, `udp:192.0.2.1`): it
/// runs the protocol the tool says the link carries, is taken to advertise that protocol's
/// service, and is reached in real time through `connector`.
package struct PacketLinkDevice: TransportDevice {
    /// Opens the link.
    package let connector: any Connector
    package let address: String
    package let summary: String
    /// The protocol the link carries.
    package let protocolName: String
    /// The service it is taken to advertise, so that the catalog's family for the protocol matches.
    package let advertisedService: GATTUUID?

    /// A device; `summary` says what it is and how it is reached, for a dry run.
    package init(connector: any Connector, address: String, summary: String, protocolName: String, advertisedService: GATTUUID?) {
        self.connector = connector
        self.address = address
        self.summary = summary
        self.protocolName = protocolName
        self.advertisedService = advertisedService
    }

    package var firmwareProtocol: String? { protocolName }

    package func advertisement(chosenProtocol: String?) -> Advertisement? {
        Advertisement(name: address, serviceUUIDs: advertisedService.map { [$0] } ?? [])
    }

    package func check(_ images: [FirmwareImage]) {}

    package func withSession<R>(
        _ request: SessionRequest, _ body: @concurrent (any TransportSession) async throws(OTAError) -> R
    ) async throws(OTAError) -> R {
        try await body(DirectTransportSession(connector: connector, clock: RealTimeClock(), restartDelay: .seconds(2)))
    }
}

/// Finds nothing: devices on a packet link have no advertisement and are named by address. The
/// stream finishes at once.
package struct PacketLinkScanner: DeviceScanner {
    package init() {}

    package var clock: any Clock<Duration> { RealTimeClock() }

    package func discoveries() -> AsyncThrowingStream<DiscoveredDevice, any Error> {
        AsyncThrowingStream { $0.finish() }
    }
}
