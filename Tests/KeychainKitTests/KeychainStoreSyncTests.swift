import Foundation
import KeychainKit
import KeychainTestSupport
import Testing

/// KeychainKit's sync API in embedded mode: two stores (two keychain folders, each syncing in this process) and the
/// real `keychain-sync-server` on a real PostgreSQL.
@Suite struct KeychainStoreSyncTests {
    /// A store in a fresh folder, removed when the test ends.
    final class Folder {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keychainkit-sync-\(UUID().uuidString)").path
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func store() throws -> KeychainStore { try KeychainStore(directory: path, accessGroups: ["com.example.sync"]) }
    }

    @Test(.enabled(if: SyncServerProcess.isAvailable, "needs the Network trait (swift test --traits Network) and PostgreSQL: set KEYCHAIN_TEST_POSTGRES_SOCKET (and _USER), as .ci/run does"))
    func twoStoresJoinAndSyncWithTheirStatusAsEvents() throws {
        let server = try SyncServerProcess()
        defer { server.stop() }
        // Synchronous, its async work on threads of its own: neither its start nor its HTTP exchanges wait for a turn
        // on the global pool, which the blocking tests can hold for minutes (DedicatedThreadExecutor).
        try DedicatedThreadExecutor.shared.runBlocking {
            try await server.showingLogOnFailure { try await Self.joinAndSync(server: server) }
        }
    }

    static func joinAndSync(server: SyncServerProcess) async throws {
        let url = try #require(URL(string: server.url))
        let alphaFolder = Folder(), betaFolder = Folder()
        let alpha = try alphaFolder.store(), beta = try betaFolder.store()

        let account = try await alpha.createSyncAccount(server: url, deviceName: "alpha")
        guard case .pending(let code, let fingerprint) = try await beta.joinSyncAccount(account, server: url) else {
            Issue.record("the join did not wait for approval")
            return
        }
        #expect(try await alpha.approveSyncDevice(code: code, name: "beta") == fingerprint)
        #expect(try await beta.joinSyncAccount(account, server: url) == .joined(account: account))

        // The status as events: at once, then each change (a pending write, then the round that sent it).
        var events = alpha.syncEvents(interval: .milliseconds(20)).makeAsyncIterator()
        let first = try #require(try await events.next())
        #expect(first.account == account && first.server == url && first.isJoined && first.lastSync == nil && first.pendingChanges == 0)
        try Keychain(service: "svc", in: alpha).synchronizable(true).set("s3cret", for: "shared")
        let pending = try #require(try await events.next())
        #expect(pending.pendingChanges == 1 && pending.lastSync == nil)
        let sent = try await alpha.syncNow()
        #expect(sent.applied == 0 && sent.uploaded == 1 && sent.conflictsResolved == 0 && sent.rejected == 0)
        let synced = try #require(try await events.next())
        #expect(synced.pendingChanges == 0 && synced.lastSync != nil && synced.lastError == nil)

        let received = try await beta.syncNow()
        #expect(received.applied == 1 && received.uploaded == 0 && received.conflictsResolved == 0 && received.rejected == 0)
        #expect(try Keychain(service: "svc", in: beta).synchronizable(true).string(for: "shared") == "s3cret")

        let devices = try await beta.syncDevices()
        #expect(Set(devices.map(\.name)) == ["alpha", "beta"])
        #expect(devices.filter(\.isThisDevice).map(\.name) == ["beta"])
        #expect(devices.allSatisfy { $0.id.count == 32 })
    }

    /// A store in no account: the status says so, a round is `errSecItemNotFound`, and bad arguments are
    /// `errSecParam` before anything is sent.
    @Test func aStoreInNoAccount() async throws {
        let folder = Folder()
        let store = try folder.store()
        var events = store.syncEvents(interval: .milliseconds(10)).makeAsyncIterator()
        let status = try #require(try await events.next())
        #expect(status.account == nil && status.server == nil && status.deviceID == nil && !status.isJoined)
        await #expect { try await store.syncNow() } throws: { ($0 as? KeychainError)?.status == .itemNotFound }
        await #expect { try await store.syncDevices() } throws: { ($0 as? KeychainError)?.status == .itemNotFound }
        let ftp = try #require(URL(string: "ftp://example.com"))
        await #expect { try await store.createSyncAccount(server: ftp) } throws: { ($0 as? KeychainError)?.status == .param }
        let local = try #require(URL(string: "http://127.0.0.1:9"))
        await #expect { try await store.approveSyncDevice(code: "ABCDE-FGHJK", name: " ") } throws: { ($0 as? KeychainError)?.status == .param }
        await #expect { try await store.joinSyncAccount("", server: local) } throws: { ($0 as? KeychainError)?.status == .param }
    }

    /// A server that is not there: `errSecIO` saying to check the address, with a cause that names the call and
    /// what the socket met (not the bare type name `ClientError`, which told nobody anything).
    @Test func anUnreachableServerSaysWhatTheCallMet() async throws {
        let folder = Folder()
        let store = try folder.store()
        // A port that was just listening and is closed now: nothing answers there.
        let port = try unusedLoopbackPort()
        let url = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let error = await #expect { try await store.createSyncAccount(server: url) } throws: { ($0 as? KeychainError)?.status == .io }
        let cause = try #require((error as? KeychainError)?.cause.map { String(describing: $0) })
        #expect(cause.hasPrefix("createAccount: "), "\(cause)")
        #expect(cause.contains("refused") || cause.contains("connect"), "\(cause)")
    }

    /// `runSync()` runs the engine in this process until its task is cancelled.
    @Test func runSyncEndsWhenCancelled() async throws {
        let folder = Folder()
        let store = try folder.store()
        let running = Task { await store.runSync() }
        running.cancel()
        await running.value
    }
}
