import Foundation
import KeychainKit

/// Runs `body` with a fresh keychain folder under the temporary directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("keychainkit-tests-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try body(directory)
}

/// Runs `body` with a store in a fresh temporary folder whose callers act as `groups`.
func withStore<T>(groups: [String] = ["com.example.tests"], _ body: (KeychainStore) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        try body(KeychainStore(directory: directory, accessGroups: groups))
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
