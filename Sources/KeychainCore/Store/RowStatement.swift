import Foundation
import GRDB
import GRDBSQLite

/// A value bound to a query's placeholder.
enum BoundValue {
    case blob(Data)
    case integer(Int64)
    case text(String)
}

/// Runs one of the engine's item SELECTs (``KeychainEngine/rowColumns``) on GRDB's prepared, cached statement with
/// SQLite's own calls, and reads each row's columns straight into a ``KeychainEngine/StoredRow``.
///
/// GRDB's row cursor builds a `Row` with its column names and converts each value through `DatabaseValue`; for the
/// single row of a find that cost as much as SQLite's step. The statement is still prepared and cached by GRDB, and
/// errors are GRDB's `DatabaseError`, so callers see the same failures as before.
struct RowStatement {
    private let statement: Statement
    private let database: Database

    /// Binds `values` to `statement` (every placeholder, in order).
    init(_ statement: Statement, in database: Database, binding values: [BoundValue]) throws {
        self.statement = statement
        self.database = database
        let sqlite = statement.sqliteStatement
        sqlite3_reset(sqlite)
        sqlite3_clear_bindings(sqlite)
        guard Int(sqlite3_bind_parameter_count(sqlite)) == values.count else {
            throw DatabaseError(resultCode: .SQLITE_RANGE, message: "wrong number of statement arguments", sql: statement.sql)
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .integer(let number):
                code = sqlite3_bind_int64(sqlite, index, number)
            case .text(let text):
                code = text.withCString { sqlite3_bind_text(sqlite, index, $0, -1, transient) }
            case .blob(let data):
                code = data.withUnsafeBytes { bytes in
                    // A zero-length blob still needs a non-NULL pointer, or SQLite binds NULL.
                    sqlite3_bind_blob(sqlite, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), transient)
                }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
    }

    /// Steps to the next row: true when there is one.
    func next() throws -> Bool {
        switch sqlite3_step(statement.sqliteStatement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw error(code)
        }
    }

    /// Resets the statement so the cache can hand it out again.
    func finish() {
        sqlite3_reset(statement.sqliteStatement)
        sqlite3_clear_bindings(statement.sqliteStatement)
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = sqlite3_errmsg(database.sqliteConnection).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }

    // MARK: Columns

    func integer(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement.sqliteStatement, column) == SQLITE_INTEGER ? sqlite3_column_int64(statement.sqliteStatement, column) : nil
    }

    func blob(_ column: Int32) -> Data? {
        let sqlite = statement.sqliteStatement
        guard sqlite3_column_type(sqlite, column) == SQLITE_BLOB else { return nil }
        let count = Int(sqlite3_column_bytes(sqlite, column))
        guard count > 0, let bytes = sqlite3_column_blob(sqlite, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    func text(_ column: Int32) -> String? {
        let sqlite = statement.sqliteStatement
        guard sqlite3_column_type(sqlite, column) == SQLITE_TEXT, let text = sqlite3_column_text(sqlite, column) else { return nil }
        let count = Int(sqlite3_column_bytes(sqlite, column))
        return String(validating: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// The current row's columns (``KeychainEngine/rowColumns``, then `secret` when asked for), without trusting
    /// them: a NULL or a value of the wrong type (a damaged or tampered file) gives nil, as
    /// ``KeychainEngine/storedRow(_:table:includeSecret:)`` does for a GRDB row.
    func storedRow(table: String, includeSecret: Bool) -> KeychainEngine.StoredRow? {
        guard let rowid = integer(0), let uuid = blob(1),
            let protection = text(2).flatMap(ProtectionClass.init(rawValue:)),
            let sync = integer(3), let tomb = integer(4),
            let groupHash = blob(5), let primaryKeyHash = blob(6), let meta = blob(7)
        else { return nil }
        let identity = ItemCrypto.RowIdentity(
            table: table, uuid: uuid, protection: protection, groupHash: groupHash,
            primaryKeyHash: primaryKeyHash, sync: sync != 0, tombstone: tomb != 0)
        return KeychainEngine.StoredRow(rowid: rowid, identity: identity, meta: meta, secret: includeSecret ? blob(8) : nil)
    }
}
