/// A table printed a row at a time, as its rows are measured: every column is as wide as the
/// widest cell it can hold, known before the first row, so a long cell never shifts the columns
/// after it.
///
/// A column's width comes from its header, a floor for the figures it holds (durations, rates),
/// and any cells known up front, such as every variant label a run will print.
struct TextTable: Sendable, Equatable {
    /// The columns' headers, for the first row.
    let headers: [String]
    /// The width of each column; a row's cells past the last column are printed as they are.
    private(set) var widths: [Int]

    /// A table of `headers`, each column at least as wide as its floor in `minimumWidths` (missing
    /// floors are 0) and as its header.
    init(_ headers: [String], minimumWidths: [Int] = []) {
        self.headers = headers
        widths = headers.enumerated().map { index, header in
            max(header.count, index < minimumWidths.count ? minimumWidths[index] : 0)
        }
    }

    /// Widens `column` to fit each of `cells`.
    mutating func fit(_ cells: some Sequence<String>, inColumn column: Int) {
        guard widths.indices.contains(column) else { return }
        for cell in cells { widths[column] = max(widths[column], cell.count) }
    }

    /// The same table with `column` widened to fit `cells`.
    func fitting(_ cells: some Sequence<String>, inColumn column: Int) -> TextTable {
        var table = self
        table.fit(cells, inColumn: column)
        return table
    }

    /// The header line.
    var headerRow: String { row(headers) }

    /// One line: each cell padded to its column's width, one space between columns, and no
    /// trailing space. A cell wider than its column (which `fit` prevents) still gets its space.
    func row(_ cells: [String]) -> String {
        var line = ""
        for (index, cell) in cells.enumerated() {
            if index > 0 { line += " " }
            line += cell
            if index < cells.count - 1, index < widths.count, cell.count < widths[index] {
                line += String(repeating: " ", count: widths[index] - cell.count)
            }
        }
        return line
    }
}
