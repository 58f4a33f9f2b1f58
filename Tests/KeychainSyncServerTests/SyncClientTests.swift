#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import PostgresNIO
import Testing

/// Devices (real keychains on disk) syncing through the real server and PostgreSQL, with the client generated
/// from the API document.
@Suite("Sync clients and the server", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncClientTests {
    @Test("A device makes the account, another joins with the code it shows, and items go both ways; the database holds no name or secret")
    func joinAndSync() async throws {
        try await TestServers.with { servers in
            let a = try SyncTestDevice(), b = try SyncTestDevice()
            a.session = try await SyncSession.createAccount(engine: a.engine, mirrorPath: a.mirrorPath, serverURL: SyncTestDevice.url(servers), name: "laptop")
            let account = try #require(a.session).account
            let invitation = try await #require(a.session).invite().invitation
            let joining = try await SyncSession.join(
                engine: b.engine, mirrorPath: b.mirrorPath, serverURL: SyncTestDevice.url(servers), account: account, invitation: invitation)
            b.session = joining.session
            #expect(try await joining.session.finishJoining() == false)  // not approved yet
            let fingerprint = try await #require(a.session).approve(joining.code, name: "desktop")
            #expect(fingerprint == joining.fingerprint)
            #expect(try await joining.session.finishJoining())

            try a.add("mail.example.com", secret: "hunter2")
            try a.add("local-only", secret: "stays", protection: "aku")
            try a.add("not-synced", secret: "stays", synchronizable: false)
            #expect(try await a.sync().uploaded == 1)
            #expect(try await b.sync().applied == 1)
            #expect(try b.secret("mail.example.com") == "hunter2")
            #expect(try b.secret("local-only") == nil)
            #expect(try b.secret("not-synced") == nil)

            try b.add("vpn.example.com", secret: "from b")
            try await b.sync()
            try await a.sync()
            #expect(try a.secret("vpn.example.com") == "from b")

            // What the server stores: no service, account, group or secret, in any column.
            let leaked = try await servers.sqlInt(
                """
                SELECT count(*) FROM records WHERE position('mail.example.com'::bytea IN ciphertext) > 0
                    OR position('hunter2'::bytea IN ciphertext) > 0 OR position('TEAM.mail'::bytea IN ciphertext) > 0
                """)
            #expect(leaked == 0)
            #expect(try await servers.sqlInt("SELECT count(*) FROM records") == 2)
        }
    }

    @Test("A removed device cannot read what is written after, and cannot sync any more")
    func removedDevice() async throws {
        try await TestServers.with { servers in
            let a = try SyncTestDevice(), b = try SyncTestDevice()
            a.session = try await SyncSession.createAccount(engine: a.engine, mirrorPath: a.mirrorPath, serverURL: SyncTestDevice.url(servers), name: "a")
            let account = try #require(a.session).account
            let joining = try await SyncSession.join(
                engine: b.engine, mirrorPath: b.mirrorPath, serverURL: SyncTestDevice.url(servers), account: account,
                invitation: try await #require(a.session).invite().invitation)
            b.session = joining.session
            try await #require(a.session).approve(joining.code, name: "b")
            #expect(try await joining.session.finishJoining())
            try a.add("before", secret: "old")
            try await a.sync()
            try await b.sync()
            #expect(try b.secret("before") == "old")

            let bID = try SyncKeyring(engine: b.engine).deviceKeys().publicKeys.deviceID
            try await #require(a.session).removeDevice(bID)
            try a.add("after", secret: "new")
            try await a.sync()
            // b is refused by the server; and the record written after, fetched directly, does not open with b's keys.
            let refused = await #expect(throws: KeychainError.self) { try await b.sync() }
            #expect(refused?.code == .syncDeviceRemoved)
            #expect((refused?.cause as? SyncRemovalNotice)?.byDevice == (try SyncKeyring(engine: a.engine).deviceKeys().publicKeys.deviceID))
            let bKeys = try SyncKeyring(engine: b.engine).zoneKeys()
            let page = try await #require(a.session).server.changes(account, zone: SyncSession.zone, since: 0)
            guard case .records(let records, _, _) = page else { Issue.record("no records"); return }
            let after = try #require(records.last)
            let error = #expect(throws: KeychainError.self) { try SyncRecordSeal.open(after.record, zoneKey: { bKeys[$0] }) }
            #expect(error?.code == .itemNotFound)
        }
    }
}
#endif
