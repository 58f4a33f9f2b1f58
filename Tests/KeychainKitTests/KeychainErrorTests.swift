import Foundation
import KeychainTestSupport
import Testing
import KeychainKit

@Suite("Errors")
struct KeychainErrorTests {
    @Test(arguments: StoreMode.allCases) func nonUTF8SecretReadAsStringThrowsDecode(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "svc", in: store)
            let bytes = Data([0xFF, 0xFE, 0xC3, 0x28])
            try keychain.set(bytes, for: "binary")
            let error = try #require(#expect(throws: KeychainError.self) { try keychain.string(for: "binary") })
            #expect(error.code == .corruptData)
            #expect(error.status == .decode)
            #expect(error.status.rawValue == -26275)
            #expect(error.message.contains("data(for:)"))
            #expect(keychain["binary"] == nil)
            #expect(try keychain.data(for: "binary") == bytes)
        }
    }

    @Test(arguments: StoreMode.allCases) func valueOfTheWrongTypeThrowsDecode(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "svc", in: store)
            try keychain.set("not json", for: "text")
            let error = try #require(#expect(throws: KeychainError.self) { try keychain.value(Token.self, for: "text") })
            #expect(error.code == .corruptData)
            #expect(error.status == .decode)
            #expect(error.cause != nil)
            // The message never quotes the secret.
            #expect(!error.description.contains("not json"))

            try keychain.set(["a": 1], for: "dict")
            expectKeychainError(.corruptData) { try keychain.value(Token.self, for: "dict") }
            #expect(try keychain.value([String: Int].self, for: "dict") == ["a": 1])
        }
    }

    @Test(arguments: StoreMode.allCases) func unencodableValueThrowsInvalidParameter(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(service: "svc", in: store)
            let error = try #require(#expect(throws: KeychainError.self) { try keychain.set([Double.nan], for: "nan") })
            #expect(error.code == .invalidParameter)
            #expect(error.status.rawValue == -50)
            #expect(try keychain.contains("nan") == false)
        }
    }

    @Test func storeRejectsBadArguments() throws {
        let emptyDirectory = try #require(
            #expect(throws: KeychainError.self) {
                try KeychainStore(directory: "", accessGroups: ["g"])
            })
        #expect(emptyDirectory.code == .invalidParameter)
        try withTemporaryDirectory { directory in
            let emptyGroup = try #require(
                #expect(throws: KeychainError.self) {
                    try KeychainStore(directory: directory, accessGroups: [""])
                })
            #expect(emptyGroup.status == .param)
        }
    }

    @Test(arguments: StoreMode.allCases) func storeWithoutDefaultGroupCannotAddWithoutExplicitGroup(_ mode: StoreMode) throws {
        try withStore(mode: mode, groups: ["*"]) { store in
            #expect(store.accessGroups == ["*"])
            let keychain = Keychain(service: "svc", in: store)
            let error = try #require(#expect(throws: KeychainError.self) { try keychain.set("x", for: "k") })
            #expect(error.status == .missingEntitlement)
            // Unrestricted: any explicit group is allowed.
            try keychain.accessGroup("anything").set("x", for: "k")
            #expect(try keychain.string(for: "k") == "x")
        }
    }
}
