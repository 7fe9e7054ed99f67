import Testing

@testable import OTACommandLine

/// Tables printed a row at a time stay aligned whatever their cells hold.
@Suite struct TextTableTests {
    @Test func cellsArePaddedToTheirColumnAndTheLastIsNot() {
        let table = TextTable(["a", "bb", "c"], minimumWidths: [3, 1])
        #expect(table.widths == [3, 2, 1])
        #expect(table.headerRow == "a   bb c")
        #expect(table.row(["x", "y", "zzzz"]) == "x   y  zzzz")
    }

    @Test func aColumnFittedToItsCellsKeepsTheNextColumnInPlace() {
        let labels = ["mcumgr buffer-size=2475 erase=first erase-timeout-ms=600000 mode=upload window=1", "generic"]
        let table = TextTable(["protocol", "profile"], minimumWidths: [17]).fitting(labels, inColumn: 0)
        let rows = [table.headerRow] + labels.map { table.row([$0, "nrf52840-mtu244-2m"]) }
        let offsets = Set(rows.map { $0.range(of: rows[0] == $0 ? "profile" : "nrf52840")!.lowerBound.utf16Offset(in: $0) })
        #expect(offsets == [labels[0].count + 1])
    }

    @Test func aCellWiderThanItsColumnStillGetsItsSpace() {
        let table = TextTable(["a", "b"])
        #expect(table.row(["wide", "b"]) == "wide b")
    }

    @Test func fittingAColumnThatDoesNotExistChangesNothing() {
        let table = TextTable(["a"], minimumWidths: [2])
        #expect(table.fitting(["long cell"], inColumn: 4) == table)
    }
}
