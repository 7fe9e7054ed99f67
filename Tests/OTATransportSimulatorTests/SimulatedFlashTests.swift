import Foundation
import OTACore
import Testing

@testable import OTATransportSimulator

@Suite struct SimulatedFlashTests {
    private let timing = FlashTiming(sectorSize: 4096, sectorEraseTime: .milliseconds(45), writeBytesPerSecond: 400_000)

    @Test func erasedFlashReadsFFAndProgrammingANDsBits() throws {
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        #expect(flash.read(0..<4) == Data([0xFF, 0xFF, 0xFF, 0xFF]))
        try flash.write(Data([0xF0, 0x0F]), at: 0)
        try flash.write(Data([0x3C, 0x3C]), at: 0)
        #expect(flash.read(0..<2) == Data([0x30, 0x0C]))
        try flash.erase(0..<1)
        #expect(flash.read(0..<2) == Data([0xFF, 0xFF]))
    }

    @Test func outOfRangeAndInjectedFailuresThrow() throws {
        let flash = SimulatedFlash(capacity: 4096, timing: timing)
        #expect(throws: FlashError.self) { try flash.write(Data(count: 2), at: 4095) }
        #expect(throws: FlashError.self) { try flash.erase(0..<5000) }
        flash.injectFailure("program failure")
        #expect(throws: FlashError("program failure")) { try flash.write(Data(count: 1), at: 0) }
        flash.injectFailure(nil)
        try flash.write(Data(count: 1), at: 0)
    }

    @Test func readsAreClampedToTheSlotLikeEveryOtherHost() throws {
        let flash = SimulatedFlash(capacity: 4096, timing: timing)
        try flash.write(Data([0x12]), at: 4095)
        #expect(flash.read(4094..<4100) == Data([0xFF, 0x12]))
        #expect(flash.read(5000..<5004).isEmpty)
        #expect(flash.takePendingCost() == timing.writeTime(1))
    }

    @Test func anEmptyEraseCostsNothing() throws {
        let flash = SimulatedFlash(capacity: 8192, timing: timing)
        try flash.erase(100..<100)
        #expect(flash.takePendingCost() == .zero)
        try flash.erase(4095..<4097)
        #expect(flash.takePendingCost() == timing.sectorEraseTime * 2)
    }
}
