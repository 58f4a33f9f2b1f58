import Foundation
import KeychainTestSupport
import Logging
import Testing
@testable import KeychainCore
@testable import KeychainDaemon

#if canImport(Glibc)
import Glibc
#endif

/// The seam between keychaind's modes: which keychain a uid is served, in a real state folder with real engines.
@Suite struct ServedKeychainsTests {
    final class Folder {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("served-\(UUID().uuidString.prefix(8))").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test func aPerUserKeychaindServesItsOwnUserOnly() throws {
        let folder = try Folder()
        let engine = try KeychainEngine(location: KeychainLocation(home: folder.path + "/home"))
        defer { try? engine.close() }
        let keychains = ServedKeychains.single(engine, uid: 1000)
        #expect(try keychains.keychain(for: 1000).engine === engine)
        let refusal = expectKeychainError(.missingEntitlement) { try keychains.keychain(for: 1001) }
        #expect(refusal?.message == "keychaind serves user 1000 only; a process of user 1001 connected.")
        #expect(!keychains.servesEveryUser)
    }

    @Test func theSystemKeychaindOpensOneKeychainPerUserOnFirstUse() throws {
        let folder = try Folder()
        let keychains = ServedKeychains.perUser(stateDirectory: folder.path, maximum: 2, idleLock: 0, logger: Logger(label: "test"))
        defer { keychains.closeAll(logger: Logger(label: "test")) }
        #expect(keychains.open.isEmpty, "nothing is opened before a user connects")
        let a = try keychains.keychain(for: 2001)
        let b = try keychains.keychain(for: 2002)
        #expect(a.engine.location.home == folder.path + "/2001")
        #expect(b.engine.location.home == folder.path + "/2002")
        #expect(try keychains.keychain(for: 2001) === a, "a user's second connection gets the same keychain")
        for home in [a.engine.location.home, b.engine.location.home] {
            var info = stat()
            #expect(lstat(home, &info) == 0)
            #expect(info.st_mode & 0o7777 == 0o700)
            #expect(info.st_uid == geteuid())
        }
        // Over the bound, a further user is told why and what to do.
        let refusal = expectKeychainError(.notAvailable) { try keychains.keychain(for: 2003) }
        #expect(refusal?.message.contains("--max-users") == true)
        #expect(keychains.open.count == 2)
    }

    @Test func aUsersFolderThatIsALinkIsRefused() throws {
        // Only keychaind's user (or root) can write the state folder; were a link planted there anyway, keychaind
        // would not follow it into another folder.
        let folder = try Folder()
        try FileManager.default.createDirectory(atPath: folder.path + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/3001", withDestinationPath: folder.path + "/elsewhere")
        let keychains = ServedKeychains.perUser(stateDirectory: folder.path, maximum: 4, idleLock: 0, logger: Logger(label: "test"))
        let refusal = expectKeychainError(.io) { try keychains.keychain(for: 3001) }
        #expect(refusal?.message.contains("is not a folder") == true)
        #expect(keychains.open.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/elsewhere").isEmpty)
    }
}
