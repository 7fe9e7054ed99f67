import CSQLite
import Foundation
import OTACore

/// One SQLite database file, opened for reading and writing: the small part of SQLite's C API
/// the campaign store needs (statements with bound parameters, rows read by column, transactions).
///
/// Not `Sendable`: the store that owns it serialises every use.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    /// The file, for messages.
    let path: String

    /// Opens (`create`: or creates) the database at `path`.
    ///
    /// - Throws: ``OTAError/Code/storage`` naming the file and SQLite's reason.
    init(path: String, create: Bool) throws(OTAError) {
        self.path = path
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX
        var opened: OpaquePointer?
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        handle = opened
        guard status == SQLITE_OK else {
            let reason = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(opened)
            handle = nil
            throw OTAError(.storage, "\(path): cannot open the campaign database (\(reason))")
        }
        // Another process (a second gateway on this host) waits for the lock instead of failing at
        // once, for about 5 s, retrying every millisecond: SQLite's own busy timeout backs off to
        // 100 ms between tries, which starves a gateway while another commits back to back.
        sqlite3_busy_handler(
            opened,
            { _, tries in
                guard tries < 5_000 else { return 0 }
                usleep(1_000)
                return 1
            }, nil)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// A value bound to a statement's `?` or read from a row.
    enum Value: Equatable {
        case integer(Int64)
        case real(Double)
        case text(String)
        case null
    }

    /// Runs `sql` (one statement) with `arguments` bound to its `?`s and returns its rows.
    ///
    /// - Throws: ``OTAError/Code/storage`` with SQLite's message.
    @discardableResult
    func query(_ sql: String, _ arguments: [Value] = []) throws(OTAError) -> [[Value]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw failure("cannot prepare")
        }
        defer { sqlite3_finalize(statement) }
        for (index, argument) in arguments.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch argument {
            case .integer(let value): status = sqlite3_bind_int64(statement, position, value)
            case .real(let value): status = sqlite3_bind_double(statement, position, value)
            case .text(let value): status = sqlite3_bind_text(statement, position, value, -1, SQLiteDatabase.transient)
            case .null: status = sqlite3_bind_null(statement, position)
            }
            guard status == SQLITE_OK else { throw failure("cannot bind") }
        }
        var rows: [[Value]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw failure("failed") }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                    case SQLITE_FLOAT: .real(sqlite3_column_double(statement, column))
                    case SQLITE_NULL: .null
                    default: .text(String(cString: sqlite3_column_text(statement, column)))
                    }
                })
        }
    }

    /// Runs one or more statements without parameters (a schema).
    func execute(_ sql: String) throws(OTAError) {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure("failed") }
    }

    /// Runs `body` in one transaction: all of its writes reach the file, or none does.
    func transaction<R>(_ body: () throws(OTAError) -> R) throws(OTAError) -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func failure(_ what: String) -> OTAError {
        OTAError(.storage, "\(path): the campaign database \(what): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// SQLITE_TRANSIENT: SQLite copies the bound text before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

extension SQLiteDatabase.Value {
    var integer: Int? {
        if case .integer(let value) = self { return Int(value) }
        return nil
    }
    var real: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }
    var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }
}
