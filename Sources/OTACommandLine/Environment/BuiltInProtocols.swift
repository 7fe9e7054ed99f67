import OTACore
import OTAProtocolEspressif
import OTAProtocolFramed
import OTAProtocolGeneric
import OTAProtocolMCUmgr
import OTAProtocolNordicDFU

/// The protocols this build of `ota` links. Adding a protocol target means adding its
/// descriptor here; nothing in OTACore changes.
enum BuiltInProtocols {
    static let registry = ProtocolRegistry([
        GenericProtocol.descriptor,
        FramedProtocol.descriptor,
        NordicDFUProtocol.descriptor,
        MCUmgrProtocol.descriptor,
        EspressifProtocol.descriptor,
    ])
}
