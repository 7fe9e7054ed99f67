import OTACore
import Testing

@testable import OTACommandLine

/// Plain progress lines at every tenth, counted again when the position moves back.
@Suite struct LineRendererTests {
    static func progress(_ percent: Int) -> UpdateEvent {
        .progress(UpdateProgress(totalBytes: 1000, bytesSent: percent * 10, position: percent * 10), at: .seconds(percent))
    }

    static func lines(_ percents: [Int]) -> [String] {
        let streams = CapturedStreams()
        var renderer = LineRenderer(streams: streams)
        for percent in percents { renderer.render(progress(percent)) }
        return streams.standardError.split(separator: "\n").map(String.init)
    }

    @Test func everyTenthOnce() {
        #expect(Self.lines([0, 5, 10, 15, 20, 95, 100]).count == 5)
    }

    @Test func aRestartFromByteZeroShowsItsProgressAgain() {
        // The first pass reached 100 %, then the protocol started over (MCUmgr after a failed
        // SHA-256, generic after a lost link): its tenths are printed again.
        let lines = Self.lines([0, 50, 100, 0, 30, 60, 100])
        #expect(lines.count == 7, "\(lines)")
        #expect(lines[3].contains("0%") || lines[3].contains(" 0 "), "\(lines[3])")
    }

    @Test func aResumeFromAnEarlierOffsetCountsFromThere() {
        let lines = Self.lines([0, 10, 20, 30, 40, 20, 30, 40, 50])
        #expect(lines.count == 9, "\(lines)")
    }
}
