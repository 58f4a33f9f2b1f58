import Foundation
import KeychainServices
import Testing

// `noErr` is an `OSStatus`, as in the Darwin overlay: wrappers store it in `OSStatus` properties and compare
// results with it. (It was an `Int` here once, which broke `open var lastResultCode: OSStatus = noErr`.)

/// A wrapper's last-result property, initialised with `noErr`.
final class StatusKeepingStore {
    var lastResultCode: OSStatus = noErr

    func add(account: String, secret: String) -> Bool {
        let q: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: account,
            kSecValueData as String: Data(secret.utf8),
        ]
        lastResultCode = SecItemAdd(q as CFDictionary, nil)
        if SecItemAdd(q as CFDictionary, nil) == noErr { return true }
        return lastResultCode == noErr
    }
}

@Suite struct NoErrTests {
    @Test func noErrIsAnOSStatusOfZero() {
        let status: OSStatus = noErr
        #expect(status == 0)
        #expect(status == errSecSuccess)
        #expect(type(of: noErr) == OSStatus.self)
    }

    @Test(arguments: Mode.allCases) func comparisonsWithNoErrBehave(_ mode: Mode) throws {
        let keychain = try SnippetKeychain(mode)
        keychain.run {
            let store = StatusKeepingStore()
            #expect(store.lastResultCode == noErr)
            // The first add succeeds and the second, inside the `if`, finds the item there.
            #expect(store.add(account: "alice", secret: "s3cret"))
            #expect(store.lastResultCode == noErr)
            #expect(!store.add(account: "alice", secret: "s3cret"))
            #expect(store.lastResultCode == errSecDuplicateItem)
        }
    }
}
