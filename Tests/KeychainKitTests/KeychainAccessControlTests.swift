import Foundation
import KeychainKit
import KeychainTestSupport
import Testing

@Suite struct KeychainAccessControlTests {
    @Test func applesRulesApply() throws {
        let control = try KeychainAccessControl([.devicePasscode, .or, .biometryAny], accessibility: .whenUnlockedThisDeviceOnly)
        #expect(control.constraints == [.devicePasscode, .or, .biometryAny])
        #expect(control.accessibility == .whenUnlockedThisDeviceOnly)
        #expect(control.isProtected)
        #expect(control.description == "devicePasscode,biometryAny,or;whenUnlockedThisDeviceOnly")
        #expect(KeychainAccessControl.Constraints.devicePasscode.rawValue == 16)
        #expect(KeychainAccessControl.Constraints(name: "biometryCurrentSet") == .biometryCurrentSet)
        #expect(KeychainAccessControl.Constraints(name: "faceID") == nil)
        for invalid: KeychainAccessControl.Constraints in [[.or, .and], [.biometryAny, .biometryCurrentSet], [.userPresence, .devicePasscode]] {
            expectKeychainStatus(.param) { try KeychainAccessControl(invalid) }
        }
        var context = KeychainAuthenticationContext(reuseDuration: .seconds(1000))
        #expect(context.reuseDuration == .seconds(300))
        context.reuseDuration = .seconds(-1)
        #expect(context.reuseDuration == .zero)
    }

    @Test(arguments: StoreMode.allCases)
    func protectedItemsThroughTheKeychain(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "com.example.vault", in: store)
            let vault = keychain.accessControl(try KeychainAccessControl(.devicePasscode))
            try vault.set("s3cret", for: "alice")  // writing never asks
            try keychain.set("plain", for: "bob")

            // Attributes, keys and existence need no prompt.
            #expect(try keychain.authentication(.failIfPrompt).contains("alice"))
            #expect(try keychain.authentication(.failIfPrompt).allKeys() == ["alice", "bob"])
            let attributes = try #require(try keychain.attributes(for: "alice"))
            #expect(attributes.accessibility == .whenUnlocked)
            #expect(attributes.accessControl == (try KeychainAccessControl(.devicePasscode)))
            #expect(try keychain.attributes(for: "bob")?.accessControl == nil)

            // The secret: never a prompt with .failIfPrompt; left out with .skipProtected; with prompts allowed
            // and no pinentry that can show a prompt here, the same -25308.
            expectKeychainStatus(.interactionNotAllowed) { try keychain.authentication(.failIfPrompt).string(for: "alice") }
            #expect(try keychain.authentication(.skipProtected).string(for: "alice") == nil)
            #expect(try keychain.authentication(.skipProtected).string(for: "bob") == "plain")
            let error = expectKeychainStatus(.interactionNotAllowed) { try keychain.string(for: "alice") }
            #expect(error?.message.contains("No prompt can be shown") == true)
            // A context that forbids interaction acts as .failIfPrompt.
            var quiet = KeychainAuthenticationContext(reason: "Read the vault")
            quiet.interactionNotAllowed = true
            let withContext = expectKeychainStatus(.interactionNotAllowed) {
                try keychain.authentication(KeychainAuthentication(.allowPrompt, reason: "Show alice", context: quiet)).string(for: "alice")
            }
            #expect(error?.message != withContext?.message)
            try quiet.invalidate(in: store)

            // The store's items carry the access control.
            var query = KeychainQuery(.genericPassword, attributes: ["svce": .string("com.example.vault")])
            query.limit = .all
            let items = try store.items(matching: query)
            #expect(items.count == 2)
            #expect(items.first { $0.attributes["acct"] == .string("alice") }?.accessControl == (try KeychainAccessControl(.devicePasscode)))
            #expect(items.first { $0.attributes["acct"] == .string("bob") }?.accessControl == nil)

            // Removing needs no prompt.
            try keychain.authentication(.failIfPrompt).remove("alice")
            #expect(try keychain.contains("alice") == false)
            // Forgetting every authorization is the admin tool's (through keychaind, the security tool's alone).
            if mode == .inProcess {
                #expect(try store.resetAuthorizations() == 0)
            } else {
                expectKeychainStatus(.missingEntitlement) { try store.resetAuthorizations() }
            }
        }
    }

    @Test func anApplicationPasswordInTheContextOpensTheItem() throws {
        try withStore { store in
            var context = KeychainAuthenticationContext()
            context.applicationPassword = Data("app password".utf8)
            let keychain = Keychain(service: "com.example.vault", in: store)
            let vault = keychain.accessControl(try KeychainAccessControl(.applicationPassword))
                .authentication(KeychainAuthentication(.failIfPrompt, context: context))
            try vault.set("s3cret", for: "alice")
            #expect(try vault.string(for: "alice") == "s3cret")
            expectKeychainStatus(.interactionNotAllowed) { try keychain.authentication(.failIfPrompt).string(for: "alice") }
        }
    }
}
