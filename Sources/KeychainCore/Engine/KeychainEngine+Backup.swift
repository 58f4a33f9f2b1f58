import Foundation
import Crypto
import GRDB

/// Backing up the whole keychain into one sealed file, and merging one back.
extension KeychainEngine {
    /// Writes every item to one backup sealed under `password`. WhenPasscodeSetThisDeviceOnly items are left
    /// out; ThisDeviceOnly items keep their secrets bound to this machine's device key. Needs the keychain
    /// unlocked (`errSecInteractionNotAllowed` otherwise). Damaged items are left out and counted in the log
    /// (`security verify-keychain` lists them).
    ///
    /// An item whose secret needs the user's presence goes into the backup only with the proof, obtained under
    /// `authentication`'s context by `caller` (one proof covers every item asking for the same factors); without
    /// it the backup fails with `errSecAuthNeeded`. An item protected by an application password is backed up
    /// still sealed under it (see ``ApplicationPasswordSeal``).
    package func backup(
        password: String, authentication: AuthenticationOptions = AuthenticationOptions(),
        caller: AccessPolicy = .unrestricted(defaultGroup: "")
    ) throws(KeychainError) -> (data: Data, summary: BackupSummary) {
        guard !password.isEmpty else { throw .param("The backup password is empty. Choose one; it is needed to restore.") }
        let device = try deviceKey()
        let gate = presenceGate(authentication, caller: caller)
        var summary = BackupSummary()
        var records: [BackupFormat.Record] = []
        for cls in ItemClass.stored {
            var q = ItemQuery(itemClass: cls)
            q.sync = .any
            q.limit = .all
            let rows = try read { db in try matchingRows(db, q, groups: nil, includeSecret: true, limit: nil, damaged: .skip) }
            for (_, item) in rows {
                guard let control = Self.accessControl(item.attributes) else { continue }
                var constraint = control.constraint(for: .decrypt)
                constraint.applicationPassword = false  // backed up still sealed under it
                if !gate.factorsProven(constraint), let requirement = Self.requirement(item, .decrypt) {
                    throw Self.presenceNeeded([requirement])
                }
            }
            for (stored, item) in rows {
                let protection = stored.identity.protection
                if protection == .whenPasscodeSetThisDeviceOnly {
                    summary.skippedPasscodeOnly += 1
                    continue
                }
                var secret = BackupFormat.Record.Secret.none
                if let data = item.data {
                    if protection.isThisDeviceOnly {
                        secret = .deviceBound(
                            try Seal.seal(
                                data, key: BackupFormat.deviceBoundKey(device),
                                aad: BackupFormat.deviceBoundAAD(cls, item.attributes), random: random))
                        summary.thisDeviceOnly += 1
                    } else {
                        secret = .plain(data)
                    }
                } else if protection.isThisDeviceOnly {
                    summary.thisDeviceOnly += 1
                }
                records.append(BackupFormat.Record(itemClass: cls, attributes: item.attributes, secret: secret))
            }
        }
        summary.items = records.count
        let bytes = try BackupFormat.encode(records, password: password, parameters: PasscodeKDF.tuned(policy: passcodePolicy, random: random), random: random)
        logger.debug("backup", metadata: ["count": "\(records.count)"])
        return (Data(bytes), summary)
    }

    /// Restores a backup: merges by primary key, the newer modification date wins. A wrong password or a
    /// damaged backup fails before anything is written; the whole restore is one transaction.
    package func restore(_ backup: Data, password: String) throws(KeychainError) -> RestoreSummary {
        let records = try BackupFormat.decode(backup, password: password)
        let device = try deviceKey()
        var summary = RestoreSummary()
        // Open every secret first: nothing is written unless the whole backup is usable.
        var prepared: [(BackupFormat.Record, Data?)] = []
        for record in records {
            switch record.secret {
            case .none: prepared.append((record, nil))
            case .plain(let data): prepared.append((record, data))
            case .deviceBound(let sealed):
                guard
                    let data = try? Seal.open(
                        sealed, key: BackupFormat.deviceBoundKey(device),
                        aad: BackupFormat.deviceBoundAAD(record.itemClass, record.attributes))
                else {
                    summary.skippedOtherDevice += 1
                    continue
                }
                prepared.append((record, Data(data)))
            }
        }
        let finalSummary = try write { db in
            var summary = summary
            for (record, secret) in prepared {
                let table = record.itemClass.table
                let primaryKeyHash = crypto.primaryKeyHash(itemClass: record.itemClass, attributes: record.attributes)
                let existing = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT \(KeychainEngine.rowColumns) FROM \"\(table)\" WHERE pk = ?"),
                    arguments: [primaryKeyHash])
                if let existing, let stored = KeychainEngine.storedRow(existing, table: table, includeSecret: false) {
                    // A damaged item is replaced by the backup's copy: restoring is how it is repaired.
                    if !stored.identity.tombstone, let current = try openAttributesIfIntact(stored) {
                        if case .date(let mine)? = current["mdat"], case .date(let theirs)? = record.attributes["mdat"], mine >= theirs {
                            summary.keptNewer += 1
                            continue
                        }
                        summary.replaced += 1
                    } else {
                        summary.added += 1
                    }
                    try db.cachedStatement(sql: "DELETE FROM \"\(table)\" WHERE rowid = ?").execute(arguments: [stored.rowid])
                } else {
                    summary.added += 1
                }
                // Sealed only for items that are written: a kept-newer item costs a lookup, not an encryption.
                let row = try prepareInsert(record.itemClass, attributes: record.attributes, secret: secret)
                try row.insert(db)
            }
            return summary
        }
        logger.debug("restore", metadata: ["added": "\(finalSummary.added)", "replaced": "\(finalSummary.replaced)"])
        return finalSummary
    }
}
