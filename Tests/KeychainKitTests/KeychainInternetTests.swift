import Foundation
import KeychainTestSupport
import Testing
import KeychainKit

@Suite("Internet passwords")
struct KeychainInternetTests {
    @Test(arguments: StoreMode.allCases) func internetPasswordRoundTrip(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let github = Keychain(
                server: "github.com", protocol: .https, port: 443, path: "/x",
                authenticationType: .httpBasic, in: store)
            try github.set("ghp_token", for: "octocat")
            #expect(try github.string(for: "octocat") == "ghp_token")
            #expect(try github.allKeys() == ["octocat"])
            let attributes = try #require(try github.attributes(for: "octocat"))
            #expect(attributes.server == "github.com")
            #expect(attributes.service == nil)
            #expect(attributes.protocol == .https)
            #expect(attributes.port == 443)
            #expect(attributes.path == "/x")
            #expect(attributes.authenticationType == .httpBasic)
            #expect(attributes.account == "octocat")

            // Another port, path, protocol or service is another set of items.
            #expect(
                try Keychain(
                    server: "github.com", protocol: .https, port: 8443, path: "/x",
                    authenticationType: .httpBasic, in: store
                ).string(for: "octocat") == nil)
            #expect(
                try Keychain(
                    server: "github.com", protocol: .http, port: 443, path: "/x",
                    authenticationType: .httpBasic, in: store
                ).contains("octocat") == false)
            #expect(
                try Keychain(
                    server: "github.com", protocol: .https, port: 443, path: "/y",
                    authenticationType: .httpBasic, in: store
                ).contains("octocat") == false)
            #expect(try Keychain(service: "github.com", in: store).contains("octocat") == false)

            try github.set("ghp_new", for: "octocat")
            #expect(try github.string(for: "octocat") == "ghp_new")
            try github.remove("octocat")
            #expect(try github.contains("octocat") == false)
        }
    }

    @Test(arguments: StoreMode.allCases) func defaultsAreStoredAsAppleDoes(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            let keychain = Keychain(server: "example.com", in: store)
            #expect(keychain.protocol == nil)
            #expect(keychain.port == nil)
            #expect(keychain.authenticationType == .default)
            try keychain.set("pw", for: "me")
            let attributes = try #require(try keychain.attributes(for: "me"))
            #expect(attributes.protocol == nil)
            #expect(attributes.port == nil)
            #expect(attributes.path == nil)
            #expect(attributes.authenticationType == .default)
            #expect(try Keychain(server: "example.com", authenticationType: .htmlForm, in: store).contains("me") == false)
        }
    }

    @Test func urlStringIsParsed() throws {
        let full = Keychain(server: "https://api.example.com:8443/v1/users?x=1")
        #expect(full.server == "api.example.com")
        #expect(full.protocol == .https)
        #expect(full.port == 8443)
        #expect(full.path == "/v1/users")
        #expect(full.authenticationType == .default)

        let bare = Keychain(server: "https://github.com")
        #expect(bare.server == "github.com")
        #expect(bare.protocol == .https)
        #expect(bare.port == nil)
        #expect(bare.path == nil)
        #expect(Keychain(server: "https://github.com/").path == nil)

        let ssh = Keychain(server: "sftp://files.example.com", authenticationType: .httpDigest)
        #expect(ssh.protocol == .ssh)
        #expect(ssh.authenticationType == .httpDigest)

        let overridden = Keychain(server: "http://example.com:80/a", protocol: .https, port: 443, path: "/b")
        #expect(overridden.protocol == .https)
        #expect(overridden.port == 443)
        #expect(overridden.path == "/b")

        let plainHost = Keychain(server: "example.com")
        #expect(plainHost.server == "example.com")
        #expect(plainHost.protocol == nil)
        #expect(plainHost.service == nil)

        #expect(KeychainInternetProtocol(scheme: "HTTPS") == .https)
        #expect(KeychainInternetProtocol(scheme: "gopher") == nil)
        #expect(KeychainInternetProtocol.https.rawValue == "htps")
        #expect(KeychainInternetProtocol.ssh.rawValue == "ssh ")
        #expect(KeychainAuthenticationType.httpBasic.rawValue == "http")
        #expect(KeychainAuthenticationType.default.rawValue == "dflt")
    }

    @Test(arguments: StoreMode.allCases) func urlKeychainSharesItemsWithEquivalentExplicitOne(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            try Keychain(server: "https://github.com:443/login", in: store).set("pw", for: "octocat")
            let explicit = Keychain(server: "github.com", protocol: .https, port: 443, path: "/login", in: store)
            #expect(try explicit.string(for: "octocat") == "pw")
        }
    }

    @Test(arguments: StoreMode.allCases) func invalidServerFailsEveryOperation(_ mode: StoreMode) throws {
        try withStore(mode: mode) { store in
            for keychain in [
                Keychain(server: "https://", in: store), Keychain(server: "", in: store),
                Keychain(server: "example.com", port: 70000, in: store),
            ] {
                let error = try #require(#expect(throws: KeychainError.self) { try keychain.set("x", for: "k") })
                #expect(error.code == .invalidParameter)
                #expect(error.status == .param)
                #expect(!error.message.isEmpty)
                expectKeychainError(.invalidParameter) { try keychain.allKeys() }
            }
        }
    }
}
