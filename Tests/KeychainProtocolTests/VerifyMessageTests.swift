import Foundation
import KeychainCore
import Testing
@testable import KeychainProtocol

/// `verify` (request tag 21) and its answer (response tag 11), fixed by golden bytes like the other messages.
@Suite struct VerifyMessageTests {
    static let request = Frame(id: 11, body: .request(.verify))
    static let response = Frame(
        id: 11,
        body: .response(
            .verification(
                KeychainIntegrityReport(
                    verified: 2, notChecked: 1,
                    damaged: [
                        DamagedItem(
                            itemClass: .genericPassword, rowid: 3,
                            persistentRef: PersistentReference(itemClass: .genericPassword, uuid: Data(repeating: 0xAB, count: 16)),
                            problem: "bad"),
                        DamagedItem(itemClass: .key, rowid: 9, persistentRef: nil, problem: "x"),
                    ]))))

    static let goldenRequest = "0000000703010000000b15"
    static let goldenResponse =
        "0000006103020000000b0b00000000000000020000000000000001000000020000000467656e700000000000000003010000001467656e70abababababababababababababababab00000003626164000000046b6579730000000000000009000000000178"

    @Test func verifyEncodesToItsGoldenBytes() {
        #expect(FrameGoldenTests.hex(Self.request.encoded) == Self.goldenRequest)
        #expect(FrameGoldenTests.hex(Self.response.encoded) == Self.goldenResponse)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        let request = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenRequest).dropFirst(4))
        guard case .request(.verify) = request.body else { Issue.record("not a verify request"); return }
        let response = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenResponse).dropFirst(4))
        guard case .response(.verification(let report)) = response.body else { Issue.record("not a verification"); return }
        #expect(
            report
                == KeychainIntegrityReport(
                    verified: 2, notChecked: 1,
                    damaged: [
                        DamagedItem(
                            itemClass: .genericPassword, rowid: 3,
                            persistentRef: PersistentReference(itemClass: .genericPassword, uuid: Data(repeating: 0xAB, count: 16)),
                            problem: "bad"),
                        DamagedItem(itemClass: .key, rowid: 9, persistentRef: nil, problem: "x"),
                    ]))
    }

    @Test func aDamagedItemOfAnUnknownClassOrABadReferenceIsRefused() throws {
        var bytes = FrameGoldenTests.unhex(Self.goldenResponse)
        // "genp" becomes "genq": not a stored class.
        let genp = Array("genp".utf8)
        let at = try #require((0..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == genp })
        bytes[at + 3] = UInt8(ascii: "q")
        #expect { try Frame.decode(body: bytes.dropFirst(4)) } throws: { ($0 as? KeychainError)?.status == .decode }
    }
}
