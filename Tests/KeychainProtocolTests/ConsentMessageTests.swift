import Foundation
import KeychainCore
import Testing
@testable import KeychainProtocol

/// `listConsents` (request tag 30), `revokeConsents` (request tag 31) and the list they answer with (response
/// tag 30), fixed by golden bytes like the other messages.
@Suite struct ConsentMessageTests {
    static let decisions = [
        ConsentDecision(
            program: .executable(path: "/bin/a", sha256: "ab"), subject: "0a", subjectDescription: "it",
            verdict: .always, date: Date(timeIntervalSinceReferenceDate: 1_000_000)),
        ConsentDecision(
            program: .flatpak("o.e.F"), subject: "/c", subjectDescription: "", verdict: .deny,
            date: Date(timeIntervalSinceReferenceDate: -1.5)),
        ConsentDecision(
            program: .snap("s"), subject: "x", subjectDescription: "d", verdict: .always,
            date: Date(timeIntervalSinceReferenceDate: 0)),
    ]
    static let list = Frame(id: 12, body: .request(.listConsents))
    static let revokeAll = Frame(id: 13, body: .request(.revokeConsents("/bin/a", subject: nil)))
    static let revokeOne = Frame(id: 14, body: .request(.revokeConsents("o.e.F", subject: "/c")))
    static let answer = Frame(id: 12, body: .response(.consents(decisions)))

    static let goldenList = "0000000703010000000c1e"
    static let goldenRevokeAll = "0000001203010000000d1f000000062f62696e2f6100"
    static let goldenRevokeOne = "0000001703010000000e1f000000056f2e652e4601000000022f63"
    static let goldenAnswer =
        "0000006703020000000c1e0000000301000000062f62696e2f6100000002616200000002306100000002697401412e84800000000002000000056f2e652e46000000022f630000000002bff800000000000003000000017300000001780000000164010000000000000000"

    @Test func consentMessagesEncodeToTheirGoldenBytes() {
        #expect(FrameGoldenTests.hex(Self.list.encoded) == Self.goldenList)
        #expect(FrameGoldenTests.hex(Self.revokeAll.encoded) == Self.goldenRevokeAll)
        #expect(FrameGoldenTests.hex(Self.revokeOne.encoded) == Self.goldenRevokeOne)
        #expect(FrameGoldenTests.hex(Self.answer.encoded) == Self.goldenAnswer)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        for (golden, expected) in [
            (Self.goldenList, KeychainRequest.listConsents), (Self.goldenRevokeAll, .revokeConsents("/bin/a", subject: nil)),
            (Self.goldenRevokeOne, .revokeConsents("o.e.F", subject: "/c")),
        ] {
            let frame = try Frame.decode(body: FrameGoldenTests.unhex(golden).dropFirst(4))
            guard case .request(let request) = frame.body else { Issue.record("not a request"); continue }
            #expect(request == expected)
        }
        let frame = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenAnswer).dropFirst(4))
        guard case .response(.consents(let decisions)) = frame.body else { Issue.record("not a consent list"); return }
        #expect(decisions == Self.decisions)
        let empty = Frame(id: 1, body: .response(.consents([])))
        guard case .response(.consents(let none)) = try Frame.decode(body: empty.encoded.dropFirst(4)).body else { Issue.record("not a list"); return }
        #expect(none.isEmpty)
    }

    @Test func anUnknownVerdictOrProgramKindOrABadDateIsRefused() throws {
        let good = FrameGoldenTests.unhex(Self.goldenAnswer)
        // The first decision's verdict byte follows "it" (u32 length 2, then "it").
        let it: [UInt8] = [0, 0, 0, 2] + Array("it".utf8)
        let at = try #require((0..<good.count - it.count).first { Array(good[$0..<$0 + it.count]) == it }) + it.count
        #expect(good[at] == 1)
        for verdict: UInt8 in [0, 3, 0xFF] {
            var bytes = good
            bytes[at] = verdict
            #expect { try Frame.decode(body: bytes.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        }
        // A date that is not a finite number of seconds.
        var nan = good
        for index in at + 1...at + 8 { nan[index] = 0xFF }
        #expect { try Frame.decode(body: nan.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        // Program kind 4 does not exist (the first decision's kind byte follows the count).
        var kind = good
        kind[4 + 1 + 1 + 4 + 1 + 4] = 4
        #expect { try Frame.decode(body: kind.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        // A count the bytes cannot hold is refused before anything is allocated.
        var count = good
        count[4 + 1 + 1 + 4 + 1..<4 + 1 + 1 + 4 + 1 + 4] = [0xFF, 0xFF, 0xFF, 0xFF]
        #expect { try Frame.decode(body: count.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
    }
}
