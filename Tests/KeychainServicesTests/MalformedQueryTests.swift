import Foundation
import Testing
import KeychainServices

/// One malformed call and the status Apple's keychain returns for it.
struct Malformed: CustomTestStringConvertible, Sendable {
    enum Call: Sendable { case add, copy, update, delete }
    let name: String
    let call: Call
    let query: @Sendable () -> [String: Any]
    var update: @Sendable () -> [String: Any] = { [kSecAttrLabel as String: "x"] }
    let expected: OSStatus
    var testDescription: String { name }
}

let malformed: [Malformed] = [
    .init(name: "missing class", call: .copy, query: { [kSecAttrAccount as String: "a"] }, expected: -50),
    .init(name: "unknown class", call: .add, query: { [kSecClass as String: "nope"] }, expected: -25306),
    .init(name: "AppleShare class unsupported", call: .copy, query: { [kSecClass as String: "apls"] }, expected: -25306),
    .init(name: "class is a number", call: .copy, query: { [kSecClass as String: 5] }, expected: -50),
    .init(name: "data is a string", call: .add, query: { genp("a", "s", [kSecValueData as String: "text"]) }, expected: -50),
    .init(name: "return key is a string", call: .copy, query: { genp("a", "s", [kSecReturnData as String: "yes"]) }, expected: -50),
    .init(name: "return key is a number", call: .copy, query: { genp("a", "s", [kSecReturnData as String: 1]) }, expected: -50),
    .init(name: "bad match limit", call: .copy, query: { genp("a", "s", [kSecMatchLimit as String: "lots"]) }, expected: -50),
    .init(name: "zero match limit", call: .copy, query: { genp("a", "s", [kSecMatchLimit as String: 0]) }, expected: -50),
    .init(name: "attribute of another class", call: .add, query: { genp("a", "s", [kSecAttrServer as String: "x"]) }, expected: -25303),
    .init(
        name: "application tag on a certificate (delete)", call: .delete,
        query: { [kSecClass as String: kSecClassCertificate, kSecAttrApplicationTag as String: Data()] }, expected: -25303),
    .init(name: "unknown key", call: .copy, query: { genp("a", "s", ["bogus_key": 1]) }, expected: -50),
    .init(name: "account is a date", call: .add, query: { genp(nil, "s", [kSecAttrAccount as String: Date()]) }, expected: -50),
    .init(name: "creation date is a string", call: .copy, query: { genp(nil, nil, [kSecAttrCreationDate as String: "today"]) }, expected: -50),
    .init(name: "invalid accessibility", call: .add, query: { genp("a", "s", [kSecAttrAccessible as String: "sometimes"]) }, expected: -50),
    .init(name: "access control is not a SecAccessControl", call: .add, query: { genp("a", "s", [kSecAttrAccessControl as String: "x"]) }, expected: -50),
    .init(name: "synchronizable is a string", call: .add, query: { genp("a", "s", [kSecAttrSynchronizable as String: "maybe"]) }, expected: -50),
    .init(name: "synchronizable any in add", call: .add, query: { genp("a", "s", [kSecAttrSynchronizable as String: kSecAttrSynchronizableAny]) }, expected: -50),
    .init(name: "return keys in an update query", call: .update, query: { genp("a", "s", [kSecReturnData as String: true]) }, expected: -50),
    .init(name: "match limit in an update query", call: .update, query: { genp("a", "s", [kSecMatchLimit as String: kSecMatchLimitAll]) }, expected: -50),
    .init(
        name: "class in the update dictionary", call: .update, query: { genp("a", "s") },
        update: { [kSecClass as String: kSecClassGenericPassword] }, expected: -25303),
    .init(
        name: "foreign attribute in the update dictionary", call: .update, query: { genp("a", "s") },
        update: { [kSecAttrServer as String: "x"] }, expected: -25303),
    .init(
        name: "string data in the update dictionary", call: .update, query: { genp("a", "s") },
        update: { [kSecValueData as String: "x"] }, expected: -50),
    .init(name: "match limit one in delete", call: .delete, query: { genp("a", "s", [kSecMatchLimit as String: kSecMatchLimitOne]) }, expected: -50),
    .init(name: "numeric match limit in delete", call: .delete, query: { genp("a", "s", [kSecMatchLimit as String: 1]) }, expected: -50),
    .init(name: "persistent ref that does not parse", call: .copy, query: { [kSecValuePersistentRef as String: Data([1, 2, 3])] }, expected: -50),
    .init(name: "value ref on a password", call: .add, query: { genp("a", "s", [kSecValueRef as String: "x"]) }, expected: -50),
    .init(name: "host match on a generic password", call: .copy, query: { genp("a", "s", [kSecMatchHostOrSubdomainOfHost as String: "x"]) }, expected: -4),
    .init(name: "access group is a number", call: .add, query: { genp("a", "s", [kSecAttrAccessGroup as String: 7]) }, expected: -50),
    .init(name: "port is data", call: .add, query: { [kSecClass as String: kSecClassInternetPassword, kSecAttrPort as String: Data([1])] }, expected: -50),
    .init(name: "identity added by attributes", call: .add, query: { [kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: "x"] }, expected: -50),
]

@Suite struct MalformedQueryTests {
    @Test(arguments: Backend.allCases, malformed)
    func malformedCallGetsApplesCode(_ backend: Backend, _ m: Malformed) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            #expect(add(genp("a", "s", [kSecValueData as String: Data("x".utf8)])) == errSecSuccess)
            var result: CFTypeRef? = nil
            let status: OSStatus
            switch m.call {
            case .add: status = SecItemAdd(m.query() as CFDictionary, &result)
            case .copy: status = SecItemCopyMatching(m.query() as CFDictionary, &result)
            case .update: status = SecItemUpdate(m.query() as CFDictionary, m.update() as CFDictionary)
            case .delete: status = SecItemDelete(m.query() as CFDictionary)
            }
            #expect(status == m.expected, "\(m.name)")
            #expect(result == nil)
            // Nothing was lost: the existing item is intact.
            #expect(copy(genp("a", "s", [kSecReturnData as String: true])).1 as? Data == Data("x".utf8))
        }
    }

    @Test func atLeastTwentyCases() { #expect(malformed.count >= 20) }
}
