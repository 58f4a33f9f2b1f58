import Foundation
import KeychainClient
import KeychainCore
import KeychainKit
import KeychainTestSupport
import Testing

/// Runs `body` with a fresh keychain folder under the temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("keychainkit-tests-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

/// Where a store's calls go: the keychain opened in the test process, or a real keychaind serving it.
enum StoreMode: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inProcess, keychaind
    var testDescription: String { rawValue }
}

/// Runs `body` with a store in a fresh temporary folder whose callers act as `groups`: opened in this process, or
/// served by a keychaind started for the test (with this test process registered for every group, so the daemon
/// grants the groups the store claims).
func withStore<T>(mode: StoreMode = .inProcess, groups: [String] = ["com.example.tests"], _ body: (KeychainStore) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        switch mode {
        case .inProcess:
            return try body(KeychainStore(directory: directory, accessGroups: groups))
        case .keychaind:
            let engine = try KeychainEngine(location: KeychainLocation(home: directory))
            let (exe, sha256) = try testExecutable.get()
            try InProcessKeychain(engine: engine, caller: AccessPolicy(groups: ["*"])).register(
                AppRegistration(program: .executable(path: exe, sha256: sha256), applicationIdentifier: nil, accessGroups: ["*"]))
            try engine.close()
            var environment = ProcessInfo.processInfo.environment
            environment["KEYCHAIN_HOME"] = directory
            environment.removeValue(forKey: "KEYCHAIN_DAEMON_SOCKET")
            environment.removeValue(forKey: "KEYCHAIN_ENTITLEMENTS")
            let daemon = try KeychaindProcess(socketPath: directory + "/keychaind.sock", environment: environment)
            defer { daemon.stop() }
            let connection = DaemonKeychain(client: DaemonClient(socketPath: daemon.socketPath), claim: groups)
            return try KeychainConnector.$override.withValue(connection) {
                let store = try KeychainStore(directory: directory, accessGroups: groups)
                return try body(store)
            }
        }
    }
}

/// A Codable value with nested and non-string fields.
struct Token: Codable, Equatable {
    var value: String
    var expiry: Date
    var scopes: [String]
    var refresh: Refresh?

    struct Refresh: Codable, Equatable {
        var value: String
        var uses: Int
    }
}

/// The test runner's executable and its SHA-256, read once (the debug runner is some 240 MB).
let testExecutable = Result<(path: String, sha256: String), any Error> {
    let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    return (path, try FileDigest.sha256Hex(ofFileAt: path))
}
