import Foundation
import KeychainDBus
import Testing
@testable import KeychainSecretService
@testable import KeychainSecretServiceClient

/// Which calls the bus thread may answer itself: small reads only, never one whose cost grows with a collection.
@Suite("Secret Service calls answered on the bus thread")
struct SecretServiceQuickCallTests {
    func call(_ interface: String, _ member: String, _ arguments: [DBusValue]) -> DBusMethodCall {
        DBusMethodCall(
            sender: ":1.9", path: "/org/freedesktop/secrets", interface: interface, member: member,
            signature: "", arguments: arguments, noReplyExpected: false, token: 1)
    }

    func attributes(_ count: Int) -> DBusValue {
        .array(elementSignature: "{ss}", (0..<count).map { .dictEntry(.string("k\($0)"), .string("v")) })
    }

    @Test("Small reads are; searches by nothing, Items, a collection's GetAll and long arrays are not")
    func smallOnly() {
        let service = "org.freedesktop.Secret.Service", properties = "org.freedesktop.DBus.Properties"
        #expect(SecretServiceProvider.isSmall(call(service, "SearchItems", [attributes(3)])))
        #expect(!SecretServiceProvider.isSmall(call(service, "SearchItems", [attributes(0)])))
        #expect(!SecretServiceProvider.isSmall(call(service, "SearchItems", [attributes(33)])))
        #expect(SecretServiceProvider.isSmall(call(properties, "Get", [.string("org.freedesktop.Secret.Collection"), .string("Label")])))
        #expect(!SecretServiceProvider.isSmall(call(properties, "Get", [.string("org.freedesktop.Secret.Collection"), .string("Items")])))
        #expect(SecretServiceProvider.isSmall(call(properties, "GetAll", [.string("org.freedesktop.Secret.Item")])))
        #expect(!SecretServiceProvider.isSmall(call(properties, "GetAll", [.string("org.freedesktop.Secret.Collection")])))
        let paths = DBusValue.array(elementSignature: "o", (0..<40).map { .objectPath("/org/freedesktop/secrets/collection/login/\($0)") })
        #expect(!SecretServiceProvider.isSmall(call(service, "GetSecrets", [paths, .objectPath("/org/freedesktop/secrets/session/1")])))
    }

    @Test("An answer's object paths are counted at any depth (memory is given back after large ones)")
    func objectPathsAreCounted() {
        let paths = (0..<1_000).map { DBusValue.objectPath("/org/freedesktop/secrets/collection/login/\($0)") }
        let search: [DBusValue] = [.array(elementSignature: "o", paths), .array(elementSignature: "o", [])]
        #expect(SecretServiceProvider.objectPaths(in: search) == 1_000)
        let getAll: [DBusValue] = [
            .array(
                elementSignature: "{sv}",
                [
                    .dictEntry(.string("Items"), .variant(.array(elementSignature: "o", paths))),
                    .dictEntry(.string("Label"), .variant(.string("Login"))),
                ])
        ]
        #expect(SecretServiceProvider.objectPaths(in: getAll) == SecretServiceProvider.largeAnswer)
        #expect(SecretServiceProvider.objectPaths(in: [.string("x"), .variant(.bool(true))]) == 0)
    }
}
