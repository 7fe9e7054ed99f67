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
}
