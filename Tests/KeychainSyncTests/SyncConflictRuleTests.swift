import Crypto
import Foundation
import KeychainSync
import KeychainTestSupport
import Testing

/// The conflict rule: every device keeps the same change whatever order changes arrive in.
@Suite("Sync conflict rule")
struct SyncConflictRuleTests {
    func stamp(_ modified: UInt64, _ device: String, deleted: Bool = false, _ content: String = "") -> SyncChangeStamp {
        SyncChangeStamp(modified: modified, device: device, deleted: deleted, digest: Data(SHA256.hash(data: Data(content.utf8))))
    }

    @Test("Newest wins; then the greater device; then a delete; the same change is the same")
    func rule() {
        #expect(SyncConflictRule.resolve(local: stamp(1, "b"), incoming: stamp(2, "a")) == .takeIncoming)
        #expect(SyncConflictRule.resolve(local: stamp(3, "a"), incoming: stamp(2, "z")) == .keepLocal)
        #expect(SyncConflictRule.resolve(local: stamp(2, "a"), incoming: stamp(2, "b")) == .takeIncoming)
        #expect(SyncConflictRule.resolve(local: stamp(2, "b", "x"), incoming: stamp(2, "b", deleted: true)) == .takeIncoming)
        #expect(SyncConflictRule.resolve(local: stamp(2, "b", deleted: true), incoming: stamp(2, "b", "x")) == .keepLocal)
        #expect(SyncConflictRule.resolve(local: stamp(5, "c", "same"), incoming: stamp(5, "c", "same")) == .same)
        // A delete is a change like any other: a later edit brings the item back.
        #expect(SyncConflictRule.resolve(local: stamp(4, "a", deleted: true), incoming: stamp(6, "b", "edit")) == .takeIncoming)
    }

    @Test("Changes applied in any order leave every device with the same one", arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func converges(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let devices = ["a1", "b2", "c3"]
        let changes = (0..<40).map { index in
            stamp(
                UInt64.random(in: 1...12, using: &random), devices[Int.random(in: 0..<3, using: &random)],
                deleted: Bool.random(using: &random), "v\(index % 7)")
        }
        var outcomes: Set<SyncChangeStamp> = []
        for _ in 0..<6 {
            var held: SyncChangeStamp?
            for change in changes.shuffled(using: &random) {
                if let current = held, SyncConflictRule.resolve(local: current, incoming: change) != .takeIncoming { continue }
                held = change
            }
            if let held { outcomes.insert(held) }
        }
        #expect(outcomes.count == 1)
        #expect(outcomes.first == changes.max())
    }
}
