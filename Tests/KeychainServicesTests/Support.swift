import Foundation
import Testing
@testable import KeychainServices
import KeychainCore

/// A real keychain in a fresh temporary folder, with SecItem calls directed to it for the current task.
final class TestKeychain: @unchecked Sendable {
    let home: String
    let engine: KeychainEngine
    var caller: AccessPolicy

    init(groups: [String] = ["com.example.app"]) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("keychain-test-\(UUID().uuidString)").path
        engine = try KeychainEngine(location: KeychainLocation(home: home))
        caller = AccessPolicy(groups: groups)
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    /// Runs `body` with SecItem calls going to this keychain as a caller with `groups` (default: the keychain's).
    func run<T>(groups: [String]? = nil, _ body: () throws -> T) rethrows -> T {
        let policy = groups.map(AccessPolicy.init(groups:)) ?? caller
        return try SecItemBackend.$override.withValue(.init(engine: engine, caller: policy), operation: body)
    }
}

func genp(_ account: String? = nil, _ service: String? = nil, _ extra: [String: Any] = [:]) -> [String: Any] {
    var q: [String: Any] = [kSecClass as String: kSecClassGenericPassword]
    if let account { q[kSecAttrAccount as String] = account }
    if let service { q[kSecAttrService as String] = service }
    for (k, v) in extra { q[k] = v }
    return q
}

@discardableResult
func add(_ q: [String: Any]) -> OSStatus { SecItemAdd(q as CFDictionary, nil) }

func copy(_ q: [String: Any]) -> (OSStatus, CFTypeRef?) {
    var item: CFTypeRef?
    let status = SecItemCopyMatching(q as CFDictionary, &item)
    return (status, item)
}

/// The directory holding the built products (the test bundle's own folder).
func productsDirectory() -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
}

struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the test helper to completion.
func runHelper(_ args: [String], environment: [String: String]) throws -> ProcessResult {
    let process = Process()
    process.executableURL = productsDirectory().appendingPathComponent("keychain-test-helper")
    process.arguments = args
    process.environment = environment
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: stderr, as: UTF8.self))
}

func baseEnvironment(home: String) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["KEYCHAIN_HOME"] = home
    env.removeValue(forKey: "KEYCHAIN_ENTITLEMENTS")
    return env
}
