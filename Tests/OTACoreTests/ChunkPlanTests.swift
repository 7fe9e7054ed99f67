import OTACore
import Testing

@Suite struct ChunkPlanTests {
    @Test(arguments: [20, 182, 244, 509])
    func payloadIsTheWholeWriteWithoutHeader(length: Int) throws {
        #expect(try ChunkPlan(maximumWriteLength: length).payloadSize == length)
        #expect(try ChunkPlan(maximumWriteLength: length, headerLength: 8).payloadSize == length - 8)
    }

    @Test func alignmentRoundsDown() throws {
        #expect(try ChunkPlan(maximumWriteLength: 182, alignment: 4).payloadSize == 180)
        #expect(try ChunkPlan(maximumWriteLength: 244, alignment: 4).payloadSize == 244)
    }

    @Test func capLimitsThePayload() throws {
        #expect(try ChunkPlan(maximumWriteLength: 244, cap: 100).payloadSize == 100)
    }

    @Test func headerThatLeavesNoPayloadIsAnError() {
        #expect(throws: OTAError.self) { try ChunkPlan(maximumWriteLength: 8, headerLength: 8) }
    }

    @Test(arguments: [1, 19, 20, 21, 1000, 12345])
    func chunksCoverTheImageExactlyOnce(count: Int) throws {
        let plan = try ChunkPlan(maximumWriteLength: 20)
        var offset = 0
        var chunks = 0
        while offset < count {
            let chunk = plan.chunk(at: offset, in: count)
            #expect(chunk.lowerBound == offset && !chunk.isEmpty && chunk.count <= 20)
            offset = chunk.upperBound
            chunks += 1
        }
        #expect(offset == count)
        #expect(chunks == plan.chunkCount(for: count))
    }
}
