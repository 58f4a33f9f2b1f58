import Foundation
import GRDB

extension KeychainEngine {
    /// Reads every row of every class and reports those whose columns are malformed or whose attributes fail
    /// authentication (a damaged or tampered file). Nothing is changed or deleted; secrets are not opened, so a
    /// locked keychain can be checked too.
    package func verify() throws(KeychainError) -> VerifyReport {
        try read { db in
            var report = VerifyReport(checked: 0, damaged: [])
            for itemClass in ItemClass.allCases where itemClass != .identity { // identities are certificate + key rows
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(KeychainEngine.rowColumns) FROM \"\(itemClass.table)\" ORDER BY rowid")
                while let row = try cursor.next() {
                    report.checked += 1
                    let rowid = Int64.fromDatabaseValue(row[0] as DatabaseValue) ?? -1
                    guard let stored = KeychainEngine.storedRow(row, table: itemClass.table, includeSecret: false) else {
                        report.damaged.append(.init(itemClass: itemClass, rowid: rowid, problem: "a column is missing or of the wrong type"))
                        continue
                    }
                    if try openAttributesSkippingCorrupt(stored.meta, row: stored.identity) == nil {
                        report.damaged.append(.init(itemClass: itemClass, rowid: rowid, problem: "its attributes fail authentication (damaged or altered)"))
                    }
                }
            }
            return report
        }
    }
}
