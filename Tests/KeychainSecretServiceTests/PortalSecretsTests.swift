import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// The Secret portal's per-application secrets as stored: one per app ID, made once, in the application's group.
@Suite("Secret portal secrets in the keychain")
struct PortalSecretsTests {
    final class Home: Sendable {
        let path = FileManager.default.temporaryDirectory.path + "/portal-secrets-" + UUID().uuidString.prefix(8)
        var location: KeychainLocation { KeychainLocation(home: path) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test("Flatpak's app IDs are accepted; empty, one-element, digit-led and odd ones are not")
    func appIDs() {
        for good in ["org.example.App", "com.github.user.my-app", "io.x_y.Z9"] { #expect(SecretStore.isValidAppID(good), "\(good)") }
        for bad in ["", "single", "org..example", "org.9example", "org.example.", "org/example.app", "org.ex ample", String(repeating: "a.", count: 128) + "b"] {
            #expect(!SecretStore.isValidAppID(bad), "\(bad)")
        }
    }

    @Test("Each application's secret is made once, kept across engines, different from another's, in its own group")
    func madeOncePerApplication() throws {
        let home = Home()
        let engine = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        let first = try SecretStore(engine: engine).portalSecret(appID: "org.example.First")
        #expect(first.count == SecretStore.portalSecretLength)
        #expect(try SecretStore(engine: engine).portalSecret(appID: "org.example.First") == first)
        let reopened = try KeychainEngine(location: home.location, tpm: nil, passcodePolicy: .testing)
        #expect(try SecretStore(engine: reopened).portalSecret(appID: "org.example.First") == first)
        #expect(try SecretStore(engine: engine).portalSecret(appID: "org.example.Second") != first)
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string("org.example.First")
        q.returns.attributes = true
        let stored = try engine.find(q, caller: AccessPolicy(groups: ["org.example.First"]))
        #expect(stored.count == 1 && stored.first?.attributes["svce"]?.stringValue == SecretStore.portalService)
        #expect(stored.first?.attributes["pdmn"]?.stringValue == ProtectionClass.afterFirstUnlockThisDeviceOnly.rawValue)
        let refused = #expect(throws: KeychainError.self) { try SecretStore(engine: engine).portalSecret(appID: "") }
        #expect(refused?.code == .invalidParameter)
    }
}
