#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import KeychainTestSupport
import PostgresNIO
import Testing

/// Three devices (three keychains on disk, three sessions) and one real server on PostgreSQL: what each device ends
/// with, and what the server's database holds, row by row and as an operator's `pg_dump` of it.
@Suite("Three devices and one server", .needsPostgres, .timeLimit(.minutes(10)))
struct ThreeDeviceSyncTests {
    /// An item a device adds, with names and a secret that appear nowhere else.
    struct Planted {
        var device: Int
        var kind: String
        var protection: String
        var synchronizable: Bool

        var eligible: Bool { synchronizable && ["ak", "ck", "dk"].contains(protection) }
        var service: String { "svc-\(kind)-d\(device).quokka-example.net" }
        var account: String { "acct-\(kind)-d\(device)@wombat-mail.org" }
        var group: String { "GRP\(device)\(kind).zebrafinch" }
        var label: String { "Label \(kind) D\(device) marmoset" }
        var secret: String { "secret-\(kind)-d\(device)-Pq7xZ" }
        /// The line ``SyncTestDevice/contents()`` shows for it.
        var line: String { [service, account, group, label, protection, secret].joined(separator: "|") }
        /// Everything about it the server must never see.
        var sensitive: [String] { [service, account, group, label, secret] }
    }

    /// What device `index` adds: one item of each syncing accessibility, one of each ThisDeviceOnly one (passcode
    /// class included), and one that is not synchronizable.
    static func planted(by index: Int) -> [Planted] {
        ["ak", "ck", "dk", "aku", "cku", "dku", "akpu"].map { Planted(device: index, kind: $0, protection: $0, synchronizable: true) }
            + [Planted(device: index, kind: "local", protection: "ak", synchronizable: false)]
    }

    /// Three devices in one account, each having added its items, synced until nothing moves.
    static func plantedAndSynced(on servers: TestServers) async throws -> ([SyncTestDevice], String, [Planted]) {
        let (devices, account) = try await SyncTestDevice.account(of: 3, on: servers)
        var all: [Planted] = []
        for (index, device) in devices.enumerated() {
            // The passcode class can hold items only once a passcode is set.
            try device.engine.changePasscode(from: nil, to: "2468")
            for item in planted(by: index) {
                try device.add(
                    item.service, account: item.account, group: item.group, label: item.label, secret: item.secret,
                    protection: item.protection, synchronizable: item.synchronizable)
                all.append(item)
            }
        }
        let passes = try await SyncTestDevice.settle(devices)
        // First pass: each uploads its own and reads those uploaded before; second: each reads the rest; third: quiet.
        #expect(passes == 3)
        return (devices, account, all)
    }

    @Test("Items added on each device appear on the other two; ThisDeviceOnly and non-synchronizable ones stay, and never reach the database")
    func itemsReachEveryDevice() async throws {
        try await TestServers.with { servers in
            let (devices, account, planted) = try await Self.plantedAndSynced(on: servers)
            let eligible = planted.filter(\.eligible)
            #expect(eligible.count == 9)
            for (index, device) in devices.enumerated() {
                // Its synchronizable items: every device's eligible ones, and its own ThisDeviceOnly ones.
                let own = planted.filter { $0.device == index && $0.synchronizable && !$0.eligible }
                #expect(try device.contents() == (eligible + own).map(\.line).sorted(), "device \(index)")
                for item in planted where !item.eligible {
                    let expected = item.device == index ? item.secret : nil
                    #expect(
                        try device.secret(item.service, account: item.account, group: item.group) == expected,
                        "device \(index), \(item.kind) item of device \(item.device)")
                }
            }

            // The database: one record per eligible item, none deleted, and each opens to one of them.
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE account_id = \(account)") == Int64(eligible.count))
            #expect(try await servers.sqlInt("SELECT count(*) FROM records") == Int64(eligible.count))
            #expect(try await servers.sqlInt("SELECT count(*) FROM records WHERE deleted") == 0)
            let session = try devices[0].requiredSession
            let zoneKeys = try session.keyring.zoneKeys()
            guard case .records(let records, _, let more) = try await session.server.changes(account, zone: SyncSession.zone, since: 0) else {
                Issue.record("the feed asked for a resync")
                return
            }
            #expect(!more)
            let opened = try records.map { try SyncItemPayload(encoded: SyncRecordSeal.open($0.record, zoneKey: { zoneKeys[$0] })) }
            let services = opened.compactMap { $0.attributes["svce"]?.stringValue }.sorted()
            #expect(services == eligible.map(\.service).sorted())
        }
    }

    /// Debian's `pg_dump` of the server's major version, if installed.
    static var pgDump: String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "\(root)/\($0)/bin/pg_dump" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The forms a string could take in a dump: UTF-8 (text columns), lowercase hex (how `pg_dump` writes
    /// `bytea`), UTF-16 both ways, and base64.
    static func forms(of text: String) -> [(String, Data)] {
        let utf8 = Data(text.utf8)
        return [
            ("UTF-8", utf8),
            ("hex", Data(utf8.map { String(format: "%02x", $0) }.joined().utf8)),
            ("UTF-16LE", text.data(using: .utf16LittleEndian) ?? Data()),
            ("UTF-16BE", text.data(using: .utf16BigEndian) ?? Data()),
            ("base64", Data(utf8.base64EncodedString().utf8)),
        ]
    }

    @Test(
        "An operator's pg_dump of the server's database holds no secret, service, account, label or access group, in any encoding",
        .enabled(if: ThreeDeviceSyncTests.pgDump != nil, "needs Debian's pg_dump (package postgresql)"))
    func dumpHoldsNoName() async throws {
        try await TestServers.with { servers in
            let (_, account, planted) = try await Self.plantedAndSynced(on: servers)
            let pgDump = try #require(Self.pgDump)
            let socket = try #require(TestPostgres.socketFolder)
            let database = servers.database
            let run = try await onThread {
                try ProgramRun.run(
                    pgDump, ["--host", socket, "--username", TestPostgres.user, "--no-password", database],
                    environment: ["PATH": "/usr/bin:/bin"], timeout: 60)
            }
            #expect(run.status == 0, "pg_dump failed: \(run.stderr)")
            let dump = run.stdoutData
            // It is a dump of this server's data: the table and the account are there, with records in hex.
            #expect(dump.range(of: Data("CREATE TABLE public.records".utf8)) != nil)
            #expect(dump.range(of: Data(account.utf8)) != nil)
            // The search finds what bytea columns do hold in the clear: the device names of the signed device list
            // (not secret; a device's name is for the person approving it).
            let nameInList = try #require(Self.forms(of: "device 1").first { $0.0 == "hex" }?.1)
            #expect(dump.range(of: nameInList) != nil)
            var leaks: [String] = []
            for item in planted {
                for text in item.sensitive {
                    for (form, bytes) in Self.forms(of: text) where dump.range(of: bytes) != nil {
                        leaks.append("\(text) as \(form)")
                    }
                }
            }
            #expect(leaks.isEmpty, "the dump shows: \(leaks)")
        }
    }
}
#endif
