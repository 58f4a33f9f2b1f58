#if Network
import Foundation
import KeychainSyncAPI
import OpenAPIRuntime

extension SyncAPI {
    func writeRecords(_ input: Operations.WriteRecords.Input) async throws -> Operations.WriteRecords.Output {
        let account = input.path.account
        let zone = input.path.zone
        let writer = try device(of: account, in: [.trusted])
        try RequestValidation.name(zone, what: "The zone")
        guard case .json(let batch) = input.body else { throw SyncFailure.badRequest("Send the writes as JSON.") }
        try RequestValidation.writes(batch.writes)
        let writes = batch.writes.map {
            RecordWrite(
                itemID: $0.itemId, expectedVersion: $0.expectedVersion, deleted: $0.deleted, ciphertext: Array($0.ciphertext.data),
                wrappedKey: Array($0.wrappedKey.data), keyID: $0.keyId
            )
        }
        switch try await store.write(account: account, zone: zone, writer: writer.deviceID, writes: writes, quota: quotaBytes) {
        case .overQuota(let wouldStore, let quota):
            throw SyncFailure(
                .init(code: 507, reasonPhrase: "Insufficient Storage"), "quota_exceeded",
                "The account would store \(wouldStore) bytes, over its quota of \(quota): delete items (their records shrink to deletions) or ask the server's operator for more room. Nothing was written."
            )
        case .written(let records, let seq):
            metrics.recordsWritten(records.count)
            return .ok(
                .init(
                    body: .json(
                        .init(records: records.map { .init(itemId: $0.itemID, version: $0.version, seq: $0.seq) }, seq: seq)
                    )
                )
            )
        case .conflict(let conflicts):
            metrics.conflict()
            return .conflict(
                .init(
                    body: .json(
                        .init(
                            error: "version_conflict",
                            message: "\(conflicts.count) item(s) changed since you read them; nothing was written. Merge with the current records and write again.",
                            conflicts: conflicts.map {
                                .init(
                                    itemId: $0.itemID, expectedVersion: $0.expectedVersion, currentVersion: $0.current?.version ?? 0,
                                    current: $0.current.map(Components.Schemas.Record.init)
                                )
                            }
                        )
                    )
                )
            )
        case .noSuchAccount:
            throw SyncFailure.noSuchAccount
        }
    }

    func getChanges(_ input: Operations.GetChanges.Input) async throws -> Operations.GetChanges.Output {
        let account = input.path.account
        let zone = input.path.zone
        _ = try device(of: account, in: [.trusted])
        try RequestValidation.name(zone, what: "The zone")
        let since = input.query.since ?? 0
        let limit = Int(input.query.limit ?? Int32(SyncLimits.defaultPageSize))
        guard since >= 0 else { throw SyncFailure.badRequest("since must be 0 or more.") }
        guard (1...SyncLimits.maximumPageSize).contains(limit) else {
            throw SyncFailure.badRequest("limit must be 1 to \(SyncLimits.maximumPageSize).")
        }
        switch try await store.changes(account: account, zone: zone, since: since, limit: limit) {
        case .page(let records, let more):
            return .ok(.init(body: .json(.init(records: records.map(Components.Schemas.Record.init), next: records.last?.seq ?? since, more: more))))
        case .resync(let purgedThrough):
            return .gone(
                .init(
                    body: .json(
                        .init(
                            error: "resync",
                            message: "Deletions up to seq \(purgedThrough) were purged after since=\(since): read the zone again from since=0 and drop local items that no longer appear.",
                            resync: true
                        )
                    )
                )
            )
        case .noSuchAccount:
            throw SyncFailure.noSuchAccount
        }
    }
}
#endif
