import Foundation
import KeychainClient
import KeychainCore
import KeychainTestSupport

/// Where a snippet's SecItem calls go.
enum Mode: String, CaseIterable, Sendable, CustomStringConvertible {
    /// The keychain opened in the test process, as an app linking KeychainServices without keychaind has it.
    case inProcess
    /// A real keychaind process serving the keychain, reached over its socket.
    case keychaind

    var description: String { rawValue }
}

/// A fresh keychain in a temporary folder for one test, with the SecItem calls of ``run(_:)`` going to it as a caller
/// of the access groups `com.example.app` (the default group of new items) and `com.example.shared`.
///
/// Through keychaind, the test process is registered for every group and claims those two per call, so keychaind
/// decides as it does for an app of those groups. With a passcode, the keychain has one and is unlocked (items
/// `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly` need one).
final class SnippetKeychain: @unchecked Sendable {
    static let groups = ["com.example.app", "com.example.shared"]

    let home: String
    private let engine: KeychainEngine
    private let daemon: KeychaindProcess?

    init(_ mode: Mode, passcode: String? = nil) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("snippet-\(UUID().uuidString)").path
        engine = try KeychainEngine(location: KeychainLocation(home: home))
        if let passcode { try engine.changePasscode(from: nil, to: passcode) }
        switch mode {
        case .inProcess:
            daemon = nil
        case .keychaind:
            let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let registration = AppRegistration(
                program: .executable(path: executable, sha256: try Self.runnerDigest.get()), applicationIdentifier: nil,
                accessGroups: ["*"])
            try engine.updateAppRegistry { $0.register(registration) }
            var environment = ProcessInfo.processInfo.environment
            environment["KEYCHAIN_HOME"] = home
            environment["KEYCHAIN_ENTITLEMENTS"] = nil
            let started = try KeychaindProcess(socketPath: home + "/keychaind.sock", environment: environment)
            daemon = started
            // keychaind starts locked, as after a reboot, until the passcode is given.
            if let passcode { try DaemonKeychain(client: DaemonClient(socketPath: started.socketPath), claim: Self.groups).unlock(passcode: passcode) }
        }
    }

    deinit {
        _ = daemon?.stop()
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Runs `body` with this test's SecItem calls (and LAContext's) going to this keychain.
    func run<T>(_ body: () throws -> T) rethrows -> T {
        let connection: any KeychainConnection
        if let daemon {
            connection = DaemonKeychain(client: DaemonClient(socketPath: daemon.socketPath), claim: Self.groups)
        } else {
            connection = InProcessKeychain(engine: engine, caller: AccessPolicy(groups: Self.groups))
        }
        return try KeychainConnector.$override.withValue(connection, operation: body)
    }

    /// The test runner's SHA-256, computed once: the debug runner is large.
    private static let runnerDigest = Result<String, any Error> {
        try FileDigest.sha256Hex(ofFileAt: FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    }
}
