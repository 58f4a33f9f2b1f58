import Foundation
import KeychainCore
import KeychainProtocol
import Logging
import Testing
@testable import KeychainDaemon

#if Network
import KeychainSyncClient
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Who may send keychaind sync commands: managing the account, its devices and rounds is the admin tool's (the
/// user's), like the passcode and backups; the status any caller may read. The dispatcher answers this test
/// process, which is not the admin tool (that is a path that does not exist), on a real keychain.
@Suite struct SyncPolicyTests {
    final class Fixture: @unchecked Sendable {
        let home: String
        let engine: KeychainEngine
        let dispatcher: RequestDispatcher
        let session: Session

        init() throws {
            home = FileManager.default.temporaryDirectory.appendingPathComponent("sync-policy-\(UUID().uuidString.prefix(8))").path
            engine = try KeychainEngine(location: KeychainLocation(home: home))
            let logger = Logger(label: "sync-policy-test")
            let authority = Authority(engine: engine, adminToolPath: "/nonexistent/security", logger: logger)
            dispatcher = RequestDispatcher(authority: authority, logger: logger)
            session = try authority.session(pid: getpid(), uid: getuid())
        }

        deinit {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: home)
        }
    }

    @Test(arguments: [
        (SyncCommand.createAccount(server: "http://127.0.0.1:9", deviceName: "pc"), "create a sync account"),
        (.join(server: "http://127.0.0.1:9", account: "acc"), "join a sync account"),
        (.approve(code: "ABCDE-FGHJK", deviceName: "pc"), "approve a device for sync"),
        (.devices, "list the sync account's devices"),
        (.removeDevice(id: "0123456789abcdef0123456789abcdef"), "remove a device from sync"),
        (.now, "sync now"),
    ])
    func anotherProgramIsRefusedTheAccountsControl(_ command: SyncCommand, _ action: String) throws {
        let fixture = try Fixture()
        #expect(!fixture.session.isAdminTool)
        guard case .failure(let error) = fixture.dispatcher.respond(to: .sync(command), session: fixture.session) else {
            Issue.record("\(command) was answered for a program that is not the admin tool")
            return
        }
        #expect(error.code == .missingEntitlement)
        #expect(error.status == .missingEntitlement)
        #expect(error.status.rawValue == -34018)
        #expect(error.message == "Only the security tool may \(action) through keychaind; \(fixture.session.identity) may not.")
        // Refused before the engine was asked: no mirror was made.
        #expect(!FileManager.default.fileExists(atPath: fixture.engine.location.syncMirrorPath))
    }

    /// Any caller may read where sync stands: a keychain in no account says so. The request is answered on a thread of
    /// its own, as keychaind answers each connection: the dispatcher waits there for the sync engine, which must not
    /// wait for a thread of Swift's pool that this test holds.
    @Test func anyProgramMayReadTheStatus() async throws {
        #if Network
        // As keychaind does at start (without it, the answer depends on whether another test installed them first).
        NetworkServices.install()
        #endif
        let fixture = try Fixture()
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<KeychainResponse, Never>) in
            Thread.detachNewThread {
                continuation.resume(returning: fixture.dispatcher.respond(to: .sync(.status), session: fixture.session))
            }
        }
        #if !Network
        guard case .failure(let error) = response else {
            Issue.record("the status was answered by a build without the sync client: \(response)")
            return
        }
        #expect(error.message.hasPrefix("This program was built without the sync client."))
        return
        #endif
        guard case .sync(.status(let report)) = response else {
            Issue.record("the status was not answered: \(response)")
            return
        }
        #expect(report.account == nil)
        #expect(report.joined == false)
        #expect(report.lastSync == nil)
    }
}
