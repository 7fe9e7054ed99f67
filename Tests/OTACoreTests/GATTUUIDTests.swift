import OTACore
import Testing

@Suite struct GATTUUIDTests {
    @Test func shortFormsExpandOnTheBaseUUID() throws {
        let short = try #require(GATTUUID("180F"))
        let long = try #require(GATTUUID("0000180F-0000-1000-8000-00805F9B34FB"))
        #expect(short == long)
        #expect(short.description == "0000180f-0000-1000-8000-00805f9b34fb")
        #expect(GATTUUID("0000180f") == short)
    }

    @Test func longFormRoundTrips() throws {
        let text = "4f544102-8a2e-4c1b-9f3d-2b7e5c6a0001"
        #expect(try #require(GATTUUID(text)).description == text)
        #expect(GATTUUID(text.uppercased()) == GATTUUID(text))
    }

    @Test(arguments: ["", "18F", "xyz1", "4f544102-8a2e-4c1b-9f3d-2b7e5c6a00", "4f5441028a2e-4c1b-9f3d-2b7e-5c6a0001", "180F-"])
    func rejectsMalformed(text: String) {
        #expect(GATTUUID(text) == nil)
    }

    @Test func bytesRoundTripMostSignificantFirst() throws {
        let uuid = try #require(GATTUUID("4f544102-8a2e-4c1b-9f3d-2b7e5c6a0001"))
        #expect(uuid.bytes == [0x4F, 0x54, 0x41, 0x02, 0x8A, 0x2E, 0x4C, 0x1B, 0x9F, 0x3D, 0x2B, 0x7E, 0x5C, 0x6A, 0x00, 0x01])
        #expect(GATTUUID(bytes: uuid.bytes) == uuid)
        #expect(try #require(GATTUUID("180F")).bytes == [0, 0, 0x18, 0x0F, 0, 0, 0x10, 0, 0x80, 0, 0, 0x80, 0x5F, 0x9B, 0x34, 0xFB])
        #expect(GATTUUID(bytes: [UInt8](repeating: 0, count: 15)) == nil)
        #expect(GATTUUID(bytes: [UInt8](repeating: 0, count: 17)) == nil)
    }

    @Test func thirtyTwoBitAndUndashedFormsExpandAlike() throws {
        let long = try #require(GATTUUID("12345678-0000-1000-8000-00805f9b34fb"))
        #expect(GATTUUID("12345678") == long)
        #expect(GATTUUID("1234567800001000800000805F9B34FB") == long)
        #expect(GATTUUID("12345678") != GATTUUID("12345679"))
    }

    @Test func equalFormsHashAlikeAndOrderByTheirBytes() throws {
        let short = try #require(GATTUUID("2A19"))
        let long = try #require(GATTUUID("00002a19-0000-1000-8000-00805f9b34fb"))
        #expect(Set([short, long]).count == 1)
        #expect(short.hashValue == long.hashValue)
        let texts = [
            "ffffffff-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001", "180F", "180A",
            "00000000-0000-0000-ffff-000000000000", "4f544100-8a2e-4c1b-9f3d-2b7e5c6a0001",
        ]
        let uuids = try texts.map { try #require(GATTUUID($0)) }
        // The order of the 16 bytes, most significant first, whatever the storage.
        #expect(uuids.sorted().map(\.bytes) == uuids.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test(arguments: ["１８０Ｆ", "180g", "0x180F", "4f544102-8a2e-4c1b-9f3d-2b7e5c6a000", "4f544102--8a2e-4c1b-9f3d-2b7e5c6a0001"])
    func rejectsWhatIsNotASCIIHexInAKnownLength(text: String) {
        #expect(GATTUUID(text) == nil)
    }
}
