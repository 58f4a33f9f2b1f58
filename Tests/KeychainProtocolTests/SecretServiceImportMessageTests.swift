import Foundation
import KeychainCore
import KeychainTestSupport
import Testing
@testable import KeychainProtocol

/// `importSecretServiceItems` (request tag 40) and `importSummary` (response tag 40), fixed by golden bytes
/// computed by hand from the encoding described in WireCoding.swift.
@Suite struct SecretServiceImportMessageTests {
    static let batch = SecretServiceImportBatch(
        collectionLabel: "W", isDefault: false,
        collectionDates: ItemDates(created: Date(timeIntervalSinceReferenceDate: 0), modified: Date(timeIntervalSinceReferenceDate: 1.5)),
        items: [
            SecretServiceImportItem(
                label: "L", attributes: ["b": "", "a": "1"], secret: Data([0, 1]), contentType: "t",
                dates: ItemDates(
                    created: Date(timeIntervalSinceReferenceDate: 0),
                    modified: Date(timeIntervalSinceReferenceDate: -1.5)))
        ])
    static let request = Frame(id: 21, body: .request(.importSecretServiceItems(batch)))
    static let response = Frame(id: 21, body: .response(.importSummary(SecretServiceImportSummary(added: 2, skipped: 1, failed: 0))))

    // length | version 3 | request | id 21 | tag 40 | "W" | not default | dates 0 and 1.5 | 1 item: "L" | "t" |
    // secret 00 01 | dates 0 and -1.5 | 2 attributes, names ascending: a=1, b=""
    static let goldenRequest =
        "00000059030100000015280000000157000100000000000000003ff800000000000000000001000000014c00000001740000000200010000000000000000bff80000000000000000000200000001610000000131000000016200000000"
    // length | version 3 | response | id 21 | tag 40 | added 2 | skipped 1 | failed 0
    static let goldenResponse = "0000001f03020000001528000000000000000200000000000000010000000000000000"

    @Test func importMessagesEncodeToTheirGoldenBytes() {
        #expect(FrameGoldenTests.hex(Self.request.encoded) == Self.goldenRequest)
        #expect(FrameGoldenTests.hex(Self.response.encoded) == Self.goldenResponse)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        let request = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenRequest).dropFirst(4))
        guard case .request(.importSecretServiceItems(let batch)) = request.body else {
            Issue.record("not an import request")
            return
        }
        #expect(batch == Self.batch)
        let response = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenResponse).dropFirst(4))
        guard case .response(.importSummary(let summary)) = response.body else {
            Issue.record("not an import summary")
            return
        }
        #expect(summary == SecretServiceImportSummary(added: 2, skipped: 1, failed: 0))
    }

    @Test func attributeNamesOutOfOrderOrTwiceAreRefused() throws {
        let good = FrameGoldenTests.unhex(Self.goldenRequest)
        // Swap the two attribute names ("a" and "b"): names no longer ascend.
        var swapped = good
        let a = try #require(swapped.lastIndex(of: UInt8(ascii: "a")))
        let b = try #require(swapped.lastIndex(of: UInt8(ascii: "b")))
        swapped[a] = UInt8(ascii: "b")
        swapped[b] = UInt8(ascii: "a")
        expectKeychainError(.corruptData) { try Frame.decode(body: swapped.dropFirst(4)) }
        var twice = good
        twice[b] = UInt8(ascii: "a")
        expectKeychainError(.corruptData) { try Frame.decode(body: twice.dropFirst(4)) }
    }

    @Test func aCountLargerThanTheBytesLeftIsRefused() throws {
        var bytes = FrameGoldenTests.unhex(Self.goldenRequest)
        // The item count (after tag, label, default flag and dates) claims 65 536 items.
        let countOffset = 4 + 6 + 1 + 5 + 1 + 1 + 16
        #expect(bytes[countOffset..<countOffset + 4].elementsEqual([0, 0, 0, 1]))
        bytes[countOffset + 1] = 1
        expectKeychainError(.corruptData) { try Frame.decode(body: bytes.dropFirst(4)) }
    }
}
