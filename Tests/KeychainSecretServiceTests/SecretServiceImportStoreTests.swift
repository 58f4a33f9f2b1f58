import Foundation
import KeychainCore
import KeychainTestSupport
import Testing
@testable import KeychainSecretService
@testable import KeychainSecretServiceClient

/// The two halves of the import that need no provider: the client's side of the key exchange, and
/// `SecretStore.importItems` on a real engine.
@Suite("Secret Service import: client session and store")
struct SecretServiceImportStoreTests {
    @Test("A client's exchange and the service's derive the same key: what one seals the other opens")
    func clientExchange() throws {
        let client = try SecretSessionCrypto.beginClientExchange()
        #expect(client.publicKey.count == 128)
        let (service, answer) = try SecretSessionCrypto.open(algorithm: .dhIETF1024SHA256AES128CBCPKCS7, input: client.publicKey)
        let session = try client.finish(serverPublicKey: answer)
        let sealed = try service.seal(Array("from the service".utf8))
        #expect(try session.open(parameters: sealed.parameters, value: sealed.value) == Array("from the service".utf8))
        let back = try session.seal(Array("from the client".utf8))
        #expect(try service.open(parameters: back.parameters, value: back.value) == Array("from the client".utf8))
        // A service key out of range is refused, as the service refuses a client's.
        #expect(throws: SecretTransferError.invalidPublicKey(.outOfRange)) { try client.finish(serverPublicKey: [1]) }
    }

    static func item(_ label: String, _ attributes: [String: String], _ secret: String, created: TimeInterval, modified: TimeInterval) -> SecretServiceImportItem {
        SecretServiceImportItem(
            label: label, attributes: attributes, secret: Data(secret.utf8), contentType: "text/plain",
            dates: ItemDates(created: Date(timeIntervalSince1970: created), modified: Date(timeIntervalSince1970: modified)))
    }

    @Test("Items keep their dates; the default goes to login, others to a collection by label; a second import skips them; bad items fail alone")
    func importItems() throws {
        let home = FileManager.default.temporaryDirectory.path + "/ss-import-store-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let engine = try KeychainEngine(location: KeychainLocation(home: home))
        let store = SecretStore(engine: engine)
        let login = Self.item("Mail", ["service": "mail"], "s3cret", created: 1_500_000_000, modified: 1_500_000_100)
        let sameAttributesOtherSecret = Self.item("Mail 2", ["service": "mail"], "other", created: 1_500_000_200, modified: 1_500_000_300)
        let tooMany = Self.item("Big", Dictionary(uniqueKeysWithValues: (0..<200).map { ("k\($0)", "v") }), "x", created: 0, modified: 0)
        let defaultBatch = SecretServiceImportBatch(
            collectionLabel: "Anything", isDefault: true, collectionDates: nil,
            items: [login, sameAttributesOtherSecret, tooMany])
        #expect(try store.importItems(defaultBatch) == SecretServiceImportSummary(added: 2, skipped: 0, failed: 1))
        #expect(try store.importItems(defaultBatch) == SecretServiceImportSummary(added: 0, skipped: 2, failed: 1))

        let work = Self.item("VPN", ["service": "vpn"], "v", created: 1_600_000_200, modified: 1_600_000_300)
        let workBatch = SecretServiceImportBatch(
            collectionLabel: "Work", isDefault: false,
            collectionDates: ItemDates(created: Date(timeIntervalSince1970: 1_600_000_000), modified: Date(timeIntervalSince1970: 1_600_000_100)),
            items: [work])
        #expect(try store.importItems(workBatch) == SecretServiceImportSummary(added: 1))
        #expect(try store.importItems(workBatch) == SecretServiceImportSummary(skipped: 1))

        let collections = try store.collections()
        #expect(collections.map(\.label).sorted() == ["Login", "Session", "Work"])  // the in-memory session collection is always there
        let loginCollection = try #require(collections.first { $0.id == SecretStore.loginID })
        let items = try store.items(in: loginCollection).sorted { $0.label < $1.label }
        #expect(items.map(\.label) == ["Mail", "Mail 2"])
        #expect(items.map(\.created) == [Date(timeIntervalSince1970: 1_500_000_000), Date(timeIntervalSince1970: 1_500_000_200)])
        #expect(items.map(\.modified) == [Date(timeIntervalSince1970: 1_500_000_100), Date(timeIntervalSince1970: 1_500_000_300)])
        #expect(try store.secret(of: items[0].id, in: loginCollection).value == Data("s3cret".utf8))

        let workCollection = try #require(collections.first { $0.label == "Work" })
        #expect(workCollection.created == Date(timeIntervalSince1970: 1_600_000_000))
        #expect(workCollection.modified == Date(timeIntervalSince1970: 1_600_000_100))
        let vpn = try #require(try store.items(in: workCollection).first)
        #expect(vpn.attributes == ["service": "vpn"])
        #expect(vpn.created == Date(timeIntervalSince1970: 1_600_000_200))
        #expect(vpn.modified == Date(timeIntervalSince1970: 1_600_000_300))

        // An ordinary add still stamps now.
        let before = Date().addingTimeInterval(-5)
        let (made, _) = try store.createItem(
            in: workCollection, label: "new", attributes: ["n": "1"], secret: Data("n".utf8),
            contentType: "text/plain", replace: false)
        #expect(made.created > before)
    }

    @Test("A batch over its bounds is refused as a whole")
    func batchBounds() throws {
        let items = Array(repeating: Self.item("x", [:], "x", created: 0, modified: 0), count: SecretServiceImportBatch.maximumItems + 1)
        let batch = SecretServiceImportBatch(collectionLabel: "c", isDefault: false, collectionDates: nil, items: items)
        expectKeychainError(.invalidParameter) { try batch.validate() }
        let late = SecretServiceImportBatch(
            collectionLabel: "c", isDefault: false,
            collectionDates: ItemDates(created: Date(timeIntervalSince1970: 3e11), modified: Date(timeIntervalSince1970: 3e11)), items: [])
        expectKeychainError(.invalidParameter) { try late.validate() }
    }
}
