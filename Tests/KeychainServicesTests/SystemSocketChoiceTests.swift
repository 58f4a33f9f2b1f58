import Foundation
import Testing
@testable import KeychainClient

/// How a client picks the system keychaind's socket (`/run/keychain/keychaind.sock`, here a test socket in its
/// place): before the per-user default socket when it answers, never over `KEYCHAIN_DAEMON_SOCKET` or a
/// `KEYCHAIN_HOME` that names another keychain.
struct SystemSocketChoiceTests {
    @Test func theSystemKeychaindComesFirstWhenItAnswers() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sys-choice-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A per-user default socket exists too (a file is enough: the connector looks for it).
        try FileManager.default.createDirectory(atPath: folder + "/runtime/keychain", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: folder + "/runtime/keychain/keychaind.sock", contents: nil))
        let userSocket = folder + "/runtime/keychain/keychaind.sock"
        let daemon = try DaemonProcess(home: folder + "/home")
        let environment = ["XDG_RUNTIME_DIR": folder + "/runtime", "HOME": folder]

        #expect(DaemonEndpoint.fromEnvironment(environment, systemSocket: daemon.socketPath) == DaemonEndpoint(path: daemon.socketPath, explicit: false))
        // KEYCHAIN_DAEMON_SOCKET still decides, and `off` still means no daemon.
        var named = environment
        named["KEYCHAIN_DAEMON_SOCKET"] = "/elsewhere.sock"
        #expect(DaemonEndpoint.fromEnvironment(named, systemSocket: daemon.socketPath) == DaemonEndpoint(path: "/elsewhere.sock", explicit: true))
        named["KEYCHAIN_DAEMON_SOCKET"] = "off"
        #expect(DaemonEndpoint.fromEnvironment(named, systemSocket: daemon.socketPath) == nil)
        // A KEYCHAIN_HOME names another keychain than the one the system keychaind serves.
        var home = environment
        home["KEYCHAIN_HOME"] = folder + "/other"
        #expect(DaemonEndpoint.fromEnvironment(home, systemSocket: daemon.socketPath) == nil)

        // No system socket, or a file there that nobody answers on: the per-user default socket.
        #expect(DaemonEndpoint.fromEnvironment(environment, systemSocket: folder + "/none.sock") == DaemonEndpoint(path: userSocket, explicit: false))
        #expect(FileManager.default.createFile(atPath: folder + "/stale.sock", contents: nil))
        #expect(DaemonEndpoint.fromEnvironment(environment, systemSocket: folder + "/stale.sock") == DaemonEndpoint(path: userSocket, explicit: false))
        #expect(daemon.stop() == 0)
    }
}
