#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import KeychainTestSupport
import Testing

/// Three devices on the real server, apart for a while: each makes 200 random edits of the same few items (updates,
/// deletes, adds again) without syncing; then they sync until nothing moves. They must end identical, and each item
/// as the written conflict rule (``SyncChangeStamp``) says.
@Suite("A partition heals", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncPartitionTests {
    /// When and by whom a change was made, ordered as ``SyncChangeStamp`` orders changes of different devices.
    struct Stamp: Comparable, CustomStringConvertible {
        var modified: UInt64
        var device: String
        var deleted: Bool

        static func < (lhs: Stamp, rhs: Stamp) -> Bool {
            if lhs.modified != rhs.modified { return lhs.modified < rhs.modified }
            if lhs.device != rhs.device { return Array(lhs.device.utf8).lexicographicallyPrecedes(Array(rhs.device.utf8)) }
            return !lhs.deleted && rhs.deleted
        }

        var description: String { "\(modified % 1_000_000)@\(device.prefix(4))\(deleted ? " delete" : "")" }
    }

    /// One change of an item: its stamp and, for a write, the content it leaves.
    struct Change: CustomStringConvertible {
        var stamp: Stamp
        var secret: String?
        var label: String?

        var description: String { "\(stamp) \(secret ?? "")" }
    }

    /// One item as the zone knows it (an identifier of its own, whatever its key): its first change, and each
    /// device's last change of it.
    final class Lineage {
        let key: String
        /// The device that made it, and how.
        let creator: Int
        let first: Change
        var last: [Int: Change] = [:]

        init(key: String, creator: Int, first: Change) {
            self.key = key
            self.creator = creator
            self.first = first
        }

        /// The changes that leave their devices: each device's last one (the creator's first only when it made
        /// no other, as a later one can fall in the same millisecond).
        var changes: [Change] { (last[creator] == nil ? [first] : []) + last.values.sorted { $0.stamp < $1.stamp } }

        /// The change the rule keeps.
        var winner: Change { changes.max { $0.stamp < $1.stamp } ?? first }
    }

    /// What the test knows of every change, so it can say what each key must end with.
    struct Model {
        var lineages: [Lineage] = []
        /// Each device's live item of each key (a lineage index).
        var live: [[String: Int]]
        /// Each device's current content of each live key.
        var content: [[String: (secret: String, label: String)]]
        /// Each device's tombstone of each deleted key (a lineage index): an add of the key takes its place and
        /// goes on with that item (the engine gives it the deleted item's identity).
        var tombstone: [[String: Int]]

        init(devices: Int) {
            live = Array(repeating: [:], count: devices)
            content = Array(repeating: [:], count: devices)
            tombstone = Array(repeating: [:], count: devices)
        }

        /// What the rule leaves under `key`: of the items that end alive, the one whose winning change is newest
        /// (two items with one key are weighed by their stamps); nil when none is alive.
        func expected(_ key: String) -> Change? {
            lineages.filter { $0.key == key }.map(\.winner).filter { !$0.stamp.deleted }.max { $0.stamp < $1.stamp }
        }
    }

    static let keys = (0..<8).map { "svc\($0).partition.example" }

    @Test(
        "200 edits on each of three devices while apart: after healing all three hold the same items, each as the rule says",
        arguments: [101, 202, 303] as [UInt64])
    func partitionHeals(seed: UInt64) async throws {
        try await TestServers.with { servers in
            var random = SeededGenerator(seed: seed)
            let (devices, _) = try await SyncTestDevice.account(of: 3, on: servers)
            let ids = try devices.map { try $0.deviceID }
            var model = Model(devices: devices.count)

            // Together: six of the eight keys exist everywhere.
            for (index, key) in Self.keys.prefix(6).enumerated() {
                let owner = index % devices.count
                try devices[owner].add(key, account: "acct", label: "initial", secret: "initial \(index)")
                let change = Change(
                    stamp: Stamp(modified: devices[owner].clock.nowMilliseconds, device: ids[owner], deleted: false),
                    secret: "initial \(index)", label: "initial")
                model.lineages.append(Lineage(key: key, creator: owner, first: change))
                for device in devices.indices {
                    model.live[device][key] = model.lineages.count - 1
                    model.content[device][key] = ("initial \(index)", "initial")
                }
            }
            #expect(try await SyncTestDevice.settle(devices) != nil)
            let together = try devices[0].contents()
            #expect(together.count == 6)
            for device in devices { #expect(try device.contents() == together) }

            // Apart: 200 edits each, of the same eight keys, clocks moving on by 0 to 0.9 s (so that changes of two
            // devices fall in the same millisecond now and then).
            for device in devices { device.clock.advance(milliseconds: 1000) }
            for step in 0..<600 {
                let index = step % devices.count
                let device = devices[index]
                device.clock.advance(milliseconds: Int64.random(in: 0...9, using: &random) * 100)
                let key = Self.keys[Int.random(in: 0..<Self.keys.count, using: &random)]
                let now = device.clock.nowMilliseconds
                let secret = "s\(step) d\(index)"
                if let lineage = model.live[index][key] {
                    if Int.random(in: 0..<10, using: &random) < 6 {
                        let label = Bool.random(using: &random) ? "label \(step)" : nil
                        try device.update(key, account: "acct", label: label, secret: secret)
                        let newLabel = label ?? model.content[index][key]?.label ?? "-"
                        model.content[index][key] = (secret, newLabel)
                        model.lineages[lineage].last[index] = Change(
                            stamp: Stamp(modified: now, device: ids[index], deleted: false),
                            secret: secret, label: newLabel)
                    } else {
                        try device.delete(key, account: "acct")
                        model.live[index][key] = nil
                        model.content[index][key] = nil
                        model.tombstone[index][key] = lineage
                        model.lineages[lineage].last[index] = Change(stamp: Stamp(modified: now, device: ids[index], deleted: true))
                    }
                } else {
                    let label = "added \(step)"
                    try device.add(key, account: "acct", label: label, secret: secret)
                    let change = Change(stamp: Stamp(modified: now, device: ids[index], deleted: false), secret: secret, label: label)
                    if let deleted = model.tombstone[index][key] {
                        // Made again where it was deleted: the same item, written again.
                        model.lineages[deleted].last[index] = change
                        model.live[index][key] = deleted
                        model.tombstone[index][key] = nil
                    } else {
                        model.lineages.append(Lineage(key: key, creator: index, first: change))
                        model.live[index][key] = model.lineages.count - 1
                    }
                    model.content[index][key] = (secret, label)
                }
            }
            for (index, device) in devices.enumerated() {
                let mine = model.content[index].map { key, value in "\(key)|acct|TEAM.mail|\(value.label)|ak|\(value.secret)" }.sorted()
                #expect(try device.contents() == mine, "device \(index) before healing")
            }

            // Healing: rounds on every device until a whole pass moves nothing.
            let passes = try await SyncTestDevice.settle(devices, limit: 10)
            #expect(passes != nil, "the devices did not settle in 10 passes")
            let final = try devices.map { try $0.contents() }
            #expect(final[1] == final[0])
            #expect(final[2] == final[0])

            // Each key as the rule says: the newest write among the items that stay alive, or nothing.
            let byKey = Dictionary(final[0].map { line in (String(line.prefix { $0 != "|" }), line) }, uniquingKeysWith: { first, _ in first })
            #expect(byKey.count == final[0].count, "two items under one key")
            for key in Self.keys {
                let expected = model.expected(key).map { "\(key)|acct|TEAM.mail|\($0.label ?? "-")|ak|\($0.secret ?? "")" }
                #expect(byKey[key] == expected, "\(key): changes \(model.lineages.filter { $0.key == key }.map(\.changes))")
            }
        }
    }

    @Test(
        "A deleted and made again on one device, edited later on another: the later edit is the newest change of the key and wins",
        arguments: [false, true])
    func deletedAndMadeAgain(editorSyncsFirst: Bool) async throws {
        try await TestServers.with { servers in
            let (devices, _) = try await SyncTestDevice.account(of: 2, on: servers)
            let (a, c) = (devices[0], devices[1])
            try a.add("vpn.example.com", secret: "together")
            #expect(try await SyncTestDevice.settle(devices) != nil)

            // Apart. A deletes the item at +1 s and makes it again at +2 s; C edits the original at +3 s, after A's
            // deletion and after A's new item: by the rule, C's edit is the newest change and the key keeps it.
            a.clock.advance(milliseconds: 1000)
            try a.delete("vpn.example.com")
            a.clock.advance(milliseconds: 1000)
            try a.add("vpn.example.com", secret: "made again on a")
            c.clock.advance(milliseconds: 3000)
            try c.update("vpn.example.com", secret: "edited on c, newest")
            // A's clock goes on before it syncs (time passes there too).
            a.clock.advance(milliseconds: 7000)

            #expect(try await SyncTestDevice.settle(editorSyncsFirst ? [c, a] : [a, c]) != nil)
            #expect(try a.contents() == c.contents())
            // Adding the item again took the place of the engine's tombstone of the original, and with it the
            // original's identity: A uploads one change of the item (its new content, +2 s), which C's edit (+3 s)
            // beats whichever device syncs first. (Before, the deletion went out as a change of its own stamped at
            // upload, +10 s, and the key ended empty on both devices.)
            #expect(try a.secret("vpn.example.com") == "edited on c, newest")
            #expect(try c.secret("vpn.example.com") == "edited on c, newest")
        }
    }
}
#endif
