import Foundation
import KeychainCore
import Testing
@testable import KeychainProtocol

/// `pendingApprovals` (request tag 32), `answerPending` (request tag 33) and the list they answer with (response
/// tag 31), fixed by golden bytes like the other messages.
@Suite struct ApprovalMessageTests {
    static let pending = [PendingApproval(id: 3, program: "/bin/a", action: "x", waited: 2, remaining: 58)]
    static let list = Frame(id: 20, body: .request(.pendingApprovals))
    static let answer = Frame(id: 21, body: .request(.answerPending(id: 7, answer: .always)))
    static let listed = Frame(id: 22, body: .response(.pendingApprovals(pending)))

    static let goldenList = "0000000703010000001420"
    static let goldenAnswer = "00000019030100000015210000000000000007" + "00000006616c77617973"
    static let goldenListed =
        "000000320302000000161f00000001" + "0000000000000003" + "000000062f62696e2f61" + "0000000178"
        + "0000000000000002" + "000000000000003a"

    @Test func approvalMessagesEncodeToTheirGoldenBytes() {
        #expect(FrameGoldenTests.hex(Self.list.encoded) == Self.goldenList)
        #expect(FrameGoldenTests.hex(Self.answer.encoded) == Self.goldenAnswer)
        #expect(FrameGoldenTests.hex(Self.listed.encoded) == Self.goldenListed)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        for (golden, expected) in [(Self.goldenList, KeychainRequest.pendingApprovals), (Self.goldenAnswer, .answerPending(id: 7, answer: .always))] {
            let frame = try Frame.decode(body: FrameGoldenTests.unhex(golden).dropFirst(4))
            guard case .request(let request) = frame.body else { Issue.record("not a request"); continue }
            #expect(request == expected)
        }
        let frame = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenListed).dropFirst(4))
        guard case .response(.pendingApprovals(let pending)) = frame.body else { Issue.record("not a list"); return }
        #expect(pending == Self.pending)
    }

    @Test func anUnknownAnswerOrAnImpossibleCountIsRefused() throws {
        var unknown = FrameGoldenTests.unhex(Self.goldenAnswer)
        unknown[unknown.count - 1] = UInt8(ascii: "z")
        #expect { try Frame.decode(body: unknown.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        var count = FrameGoldenTests.unhex(Self.goldenListed)
        count[11..<15] = [0xFF, 0xFF, 0xFF, 0xFF]
        #expect { try Frame.decode(body: count.dropFirst(4)) } throws: { ($0 as? KeychainError)?.code == .corruptData }
    }
}
