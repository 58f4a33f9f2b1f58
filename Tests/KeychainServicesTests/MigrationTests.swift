import KeychainClient
import Foundation
import Testing
import KeychainServices
@testable import KeychainCore

/// A keychain folder written by the first format (issue 2: keybag v1, schema 1), committed under Fixtures/.
@Suite struct MigrationTests {
    func copyOfFixture() throws -> String {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/keychain-v1")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("kc-v1-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: fixture, to: home)
        return home.path
    }

    @Test func aFirstFormatKeychainOpensAndUpgradesInPlace() throws {
        let home = try copyOfFixture()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let caller = AccessPolicy(groups: ["keychain-test-helper"])
        let engine = try KeychainEngine(location: KeychainLocation(home: home))
        #expect(engine.lockState == .noPasscode)
        KeychainConnector.$override.withValue(InProcessKeychain(engine: engine, caller: caller)) {
            for name in ["alice", "bob"] {
                #expect(copy(genp(name, "example.com", [kSecReturnData as String: true])).1 as? Data == Data("secret-of-\(name)".utf8))
            }
            #expect(add(genp("alice", "example.com")) == errSecDuplicateItem)  // the old index hashes still match
            #expect(add(genp("carol", "example.com", [kSecValueData as String: Data("new".utf8)])) == errSecSuccess)
        }
        // Setting a passcode upgrades the keybag to format 3 (calibrated scrypt, the throttle inside); the old
        // items survive it.
        try engine.changePasscode(from: nil, to: "1234")
        let keybag = try Data(contentsOf: URL(fileURLWithPath: home + "/keychain.keybag"))
        #expect(keybag[5] == 3)
        let rebooted = try KeychainEngine(location: KeychainLocation(home: home))
        try rebooted.unlock(passcode: "1234")
        KeychainConnector.$override.withValue(InProcessKeychain(engine: rebooted, caller: caller)) {
            for (name, secret) in [("alice", "secret-of-alice"), ("bob", "secret-of-bob"), ("carol", "new")] {
                #expect(copy(genp(name, "example.com", [kSecReturnData as String: true])).1 as? Data == Data(secret.utf8))
            }
        }
    }
}
