import Foundation
import OTACore
import Testing

@testable import OTAProtocolEspressif

@Suite struct EspressifWireTests {
    @Test func crc16IsXMODEM() {
        #expect(EspressifCRC16.checksum(Array("123456789".utf8)) == 0x31C3)
        #expect(EspressifCRC16.checksum([]) == 0)
    }
}
