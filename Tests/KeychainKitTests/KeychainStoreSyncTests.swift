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
        let alpha = Folder(), beta = Folder()
        // In a process of its own (the test helper, an app on KeychainKit): the HTTP client's tasks there wait for no
        // thread that this runner's blocking tests hold (here they once waited minutes, past the request's deadline).
        let run = try ProgramRun.run(
            BuiltProducts.path(of: "keychain-test-helper"), ["kit-sync-pair", server.url, alpha.path, beta.path],
            environment: ProcessInfo.processInfo.environment.merging(["KEYCHAIN_DAEMON_SOCKET": "off"]) { $1 }, timeout: 300)
        #expect(
            run.stdout == """
                created
                invited uri-matches=true
                pending code=true
                approved fingerprint-matches=true
                joined account-matches=true
                status joined=true last-sync=false pending=0
                status last-sync=false pending=1
                round applied=0 uploaded=1 conflicts=0 rejected=0
                status last-sync=true pending=0 error=false
                round applied=1 uploaded=0 conflicts=0 rejected=0
                beta reads s3cret
                devices alpha,beta this=beta ids=32

                """, "\(run.stderr)\nThe sync server's log ends:\n\(server.output.suffix(4000))")
        #expect(run.status == 0)
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
