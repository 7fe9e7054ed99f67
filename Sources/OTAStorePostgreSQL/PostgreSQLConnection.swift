import CLibPQ
import Foundation
import OTACore

/// One connection to a PostgreSQL server through libpq: the small part of its C API the campaign
/// store needs (statements with text parameters, rows of text, transactions). Every libpq call
/// of the package is in this file.
///
/// Not `Sendable`: the store that owns it serialises every use.
final class PostgreSQLConnection {
    private var handle: OpaquePointer?
    /// The connection URI with its password masked, for messages.
    let label: String

    /// Connects to `uri` (`postgres://` or `postgresql://`, as libpq reads it).
    ///
    /// - Throws: ``OTAError/Code/storage`` naming the server and libpq's reason, on one line.
    init(uri: String) throws(OTAError) {
        label = Self.masked(uri)
        handle = PQconnectdb(uri)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let reason = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "out of memory"
            PQfinish(handle)
            self.handle = nil
            throw OTAError(.storage, "\(label): cannot connect to the campaign database (\(reason))")
        }
        // Notices (a table that exists already, …) are not the tool's output.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// A failed statement: the server's message and its SQLSTATE code ("42P01": no such table).
    struct Failure: Error {
        var message: String
        var state: String
    }

    /// Runs `sql` (one statement) with `parameters` as its `$1`, `$2`, … (text; `nil` is NULL)
    /// and returns its rows, each value as text or `nil` for NULL.
    ///
    /// - Throws: ``Failure`` with the server's message.
    func run(_ sql: String, _ parameters: [String?] = []) throws(Failure) -> (rows: [[String?]], affected: Int) {
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let result = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else {
            let text = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
            let message = Self.oneLine(text.isEmpty ? String(cString: PQerrorMessage(handle)) : text)
            let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) } ?? ""
            throw Failure(message: message.isEmpty ? "the server did not answer" : message, state: state)
        }
        var rows: [[String?]] = []
        for row in 0..<PQntuples(result) {
            rows.append(
                (0..<PQnfields(result)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
        }
        return (rows, Int(String(cString: PQcmdTuples(result))) ?? 0)
    }

    /// ``run(_:_:)`` with the failure as the store's one line.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(OTAError) -> [[String?]] {
        do {
            return try run(sql, parameters).rows
        } catch {
            throw OTAError(.storage, "\(label): the campaign database failed: \(error.message)")
        }
    }

    /// Runs `body` in one transaction: all of its writes are committed, or none is.
    func transaction<R>(_ body: () throws(OTAError) -> R) throws(OTAError) -> R {
        try query("BEGIN")
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = try? run("ROLLBACK")
            throw error
        }
    }

    /// `uri` with the password replaced by `***`.
    static func masked(_ uri: String) -> String {
        guard var components = URLComponents(string: uri), components.password != nil else { return uri }
        components.password = "***"
        return components.string ?? uri
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
