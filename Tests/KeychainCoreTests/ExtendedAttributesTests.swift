import Foundation
import GRDB
import KeychainTestSupport
import Synchronization
import Testing
@testable import KeychainCore

/// Free-form attributes of generic passwords (`xatr`): their fixed encoded form, their limits, and their index of
/// keyed hashes (`genp_xattr`) in a real keychain on disk: search by any subset, upkeep on update, delete, passcode
/// removal, restore, and the migration of a version-1 database.
@Suite struct ExtendedAttributesTests {
    static let caller = AccessPolicy(groups: ["g"])

    // MARK: Fixtures

    /// A keychain folder of its own, removed with the object.
    final class Folder: @unchecked Sendable {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xatr-\(UUID().uuidString)").path
        var location: KeychainLocation { KeychainLocation(home: path) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// A settable clock for the engine's modification dates.
    final class Clock: Sendable {
        let seconds: Mutex<Double>
        init(_ seconds: Double) { self.seconds = Mutex(seconds) }
        var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
    }

    static func engine(_ folder: Folder, clock: Clock? = nil) throws -> KeychainEngine {
        if let clock {
            return try KeychainEngine(location: folder.location, now: { clock.now }, tpm: nil, passcodePolicy: .testing)
        }
        return try KeychainEngine(location: folder.location, tpm: nil, passcodePolicy: .testing)
    }

    /// Adds a generic password `account` (service `svc`) carrying `attributes` as its `xatr` (none when nil).
    @discardableResult
    static func add(
        _ engine: KeychainEngine, _ account: String, _ attributes: [String: String]?, service: String = "svc",
        protection: ProtectionClass? = nil, synchronizable: Bool = false
    ) throws -> FoundItem {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["acct"] = .string(account)
        q.attributes["svce"] = .string(service)
        if let attributes { q.attributes[ExtendedAttributes.code] = .data(ExtendedAttributes(attributes).encoded) }
        if let protection { q.attributes["pdmn"] = .string(protection.rawValue) }
        if synchronizable { q.sync = .synchronizable }
        q.valueData = Data("secret-\(account)".utf8)
        return try engine.add(q, caller: caller)
    }

    static func query(_ match: [String: String], sync: SyncFilter = .local) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.limit = .all
        q.returns.attributes = true
        q.sync = sync
        q.extendedMatch = match
        return q
    }

    /// The accounts of the generic passwords `match` finds (throws `errSecItemNotFound` when none).
    static func accounts(_ engine: KeychainEngine, _ match: [String: String], sync: SyncFilter = .local) throws -> [String] {
        try engine.find(query(match, sync: sync), caller: caller).compactMap { $0.attributes["acct"]?.stringValue }.sorted()
    }

    /// Expects `match` to find exactly the accounts `expected` (and `errSecItemNotFound` when that is empty).
    static func expectFound(
        _ engine: KeychainEngine, _ match: [String: String], _ expected: Set<String>, sync: SyncFilter = .local,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        if expected.isEmpty {
            expectKeychainError(.itemNotFound, "\(match)", sourceLocation: sourceLocation) { try accounts(engine, match, sync: sync) }
        } else {
            let found = try accounts(engine, match, sync: sync)
            #expect(found.count == expected.count, "no item twice for \(match)", sourceLocation: sourceLocation)
            #expect(Set(found) == expected, "\(match)", sourceLocation: sourceLocation)
        }
    }

    /// Runs `body` on a connection of its own to the keychain's database file (read-only unless `writable`).
    static func raw<T>(_ folder: Folder, writable: Bool = false, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = !writable
        let queue = try DatabaseQueue(path: folder.location.databasePath, configuration: configuration)
        defer { try? queue.close() }
        return try queue.inDatabase(body)
    }

    /// The one integer `sql` gives, read from the file.
    static func integer(_ folder: Folder, _ sql: String) throws -> Int? {
        try raw(folder) { db in try Int.fetchOne(db, sql: sql) }
    }

    /// What `genp_xattr` holds, read from the file: its row count, the rows per item (by the item's UUID), and the
    /// rows whose item is not in `genp`.
    struct IndexRows {
        var total: Int
        var byItem: [Data: Int]
        var orphans: Int
    }

    static func indexRows(_ folder: Folder) throws -> IndexRows {
        try raw(folder) { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM genp_xattr") ?? -1
            var byItem: [Data: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT g.uuid, COUNT(x.h) FROM genp g LEFT JOIN genp_xattr x ON x.item = g.rowid GROUP BY g.rowid") {
                let uuid: Data = row[0]
                let count: Int = row[1]
                byItem[uuid] = count
            }
            let orphans = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM genp_xattr WHERE item NOT IN (SELECT rowid FROM genp)") ?? -1
            return IndexRows(total: total, byItem: byItem, orphans: orphans)
        }
    }

    /// The keyed hashes stored for the item with `uuid`.
    static func storedHashes(_ folder: Folder, _ uuid: Data) throws -> Set<Data> {
        try raw(folder) { db in
            Set(try Data.fetchAll(db, sql: "SELECT h FROM genp_xattr WHERE item = (SELECT rowid FROM genp WHERE uuid = ?)", arguments: [uuid]))
        }
    }

    /// The keyed hashes the engine's keys give `attributes`' pairs.
    static func expectedHashes(_ engine: KeychainEngine, _ attributes: [String: String]) -> Set<Data> {
        Set(
            attributes.map {
                engine.crypto.attributeHash(
                    table: "genp", code: ExtendedAttributes.code,
                    value: ExtendedAttributes.indexTerm(name: $0.key, value: $0.value))
            })
    }

    static func bytes(_ hex: String) -> Data { Data(unhex(hex)) }

    // MARK: 1. The encoded form

    /// Three attributes, one value not ASCII: version 1, count 3, pairs by ascending name, u32 big-endian lengths.
    static let goldenAttributes = ["xdg:schema": "org.freedesktop.Secret.Generic", "user": "zoë", "server": "example.org"]
    static let goldenHex =
        "01" + "0003"
        + "00000006" + "736572766572" + "0000000b" + "6578616d706c652e6f7267"  // server = example.org
        + "00000004" + "75736572" + "00000004" + "7a6fc3ab"  // user = zoë
        + "0000000a" + "7864673a736368656d61"  // xdg:schema =
        + "0000001e" + "6f72672e667265656465736b746f702e5365637265742e47656e65726963"  // org.freedesktop.Secret.Generic

    @Test func theEncodedFormIsFixedByAGoldenVector() throws {
        #expect(hex(ExtendedAttributes(Self.goldenAttributes).encoded) == Self.goldenHex)
        let decoded = try ExtendedAttributes(encoded: Self.bytes(Self.goldenHex))
        #expect(decoded.values == Self.goldenAttributes)
        #expect(decoded.encoded == Self.bytes(Self.goldenHex))
        // The order the dictionary was built in makes no difference.
        var reversed = ExtendedAttributes()
        for name in Self.goldenAttributes.keys.sorted().reversed() { reversed.values[name] = Self.goldenAttributes[name] }
        #expect(hex(reversed.encoded) == Self.goldenHex)
        // No attributes: the version and a zero count.
        #expect(hex(ExtendedAttributes().encoded) == "010000")
        #expect(try ExtendedAttributes(encoded: Self.bytes("010000")).values.isEmpty)
        // An empty value is kept as one.
        #expect(hex(ExtendedAttributes(["a": ""]).encoded) == "010001" + "00000001" + "61" + "00000000")
    }

    @Test func theLargestAcceptedSetRoundTrips() throws {
        var values: [String: String] = [:]
        for i in 0..<ExtendedAttributes.maximumCount {
            let name = String(format: "%04d", i) + String(repeating: "n", count: ExtendedAttributes.maximumNameLength - 4)
            values[name] = String(repeating: Character(UnicodeScalar(UInt8(0x41 + i % 26))), count: ExtendedAttributes.maximumValueLength)
        }
        let attributes = ExtendedAttributes(values)
        try attributes.validate()
        let decoded = try ExtendedAttributes(encoded: attributes.encoded)
        #expect(decoded == attributes)
    }

    @Test func malformedEncodingsAreCorruptData() throws {
        let golden = Self.bytes(Self.goldenHex)
        var cases: [(String, Data)] = [
            ("empty", Data()),
            ("version 0", Self.bytes("000000")),
            ("version 2", Self.bytes("02" + Self.goldenHex.dropFirst(2))),
            ("version 0xff", Self.bytes("ff0000")),
            ("no count", Self.bytes("01")),
            ("half a count", Self.bytes("0100")),
            ("trailing byte", golden + [0]),
            ("trailing pair", golden + Self.bytes("00000001" + "61" + "00000001" + "62")),
            ("count 2, one pair", Self.bytes("010002" + "00000001" + "61" + "00000001" + "62")),
            ("count 1, two pairs", Self.bytes("010001" + "00000001" + "61" + "00000001" + "62" + "00000001" + "63" + "00000001" + "64")),
            ("length beyond the end", Self.bytes("010001" + "ffffffff" + "61")),
            ("name without value", Self.bytes("010001" + "00000001" + "61")),
            ("invalid UTF-8 in a name", Self.bytes("010001" + "00000001" + "ff" + "00000001" + "62")),
            ("invalid UTF-8 in a value", Self.bytes("010001" + "00000001" + "61" + "00000002" + "c328")),
            ("overlong NUL in a value", Self.bytes("010001" + "00000001" + "61" + "00000002" + "c080")),
            ("surrogate in a name", Self.bytes("010001" + "00000003" + "eda080" + "00000001" + "62")),
            ("truncated sequence in a name", Self.bytes("010001" + "00000002" + "e282" + "00000001" + "62")),
            ("count 0xffff", Self.bytes("01ffff")),
            // The writer puts names in ascending order, each once.
            ("names out of order", Self.bytes("010002" + "00000001" + "62" + "00000001" + "31" + "00000001" + "61" + "00000001" + "32")),
            ("a name twice", Self.bytes("010002" + "00000001" + "61" + "00000001" + "31" + "00000001" + "61" + "00000001" + "32")),
            ("one name in two Unicode forms", Self.bytes("010002" + "00000002" + "c3a9" + "00000001" + "31" + "00000003" + "65cc81" + "00000001" + "32")),
        ]
        // Every proper prefix of the golden vector is truncated.
        for length in 0..<golden.count { cases.append(("prefix of \(length) bytes", golden.prefix(length))) }
        // 129 well-formed pairs: the count alone is refused.
        var tooMany = BinaryWriter()
        tooMany.u8(1)
        tooMany.u16(UInt16(ExtendedAttributes.maximumCount + 1))
        for i in 0...ExtendedAttributes.maximumCount {
            tooMany.lengthPrefixedUTF8(String(format: "n%03d", i))
            tooMany.lengthPrefixedUTF8("v")
        }
        cases.append(("count 129", tooMany.data))
        for (name, encoded) in cases {
            expectKeychainError(.corruptData, status: .decode, "\(name)") { try ExtendedAttributes(encoded: encoded) }
        }
        // The same 128 pairs are accepted.
        var most = BinaryWriter()
        most.u8(1)
        most.u16(UInt16(ExtendedAttributes.maximumCount))
        for i in 0..<ExtendedAttributes.maximumCount {
            most.lengthPrefixedUTF8(String(format: "n%03d", i))
            most.lengthPrefixedUTF8("v")
        }
        #expect(try ExtendedAttributes(encoded: most.data).values.count == ExtendedAttributes.maximumCount)
    }

    // MARK: 2. Limits

    @Test func validateRefusesWhatCannotBeStored() throws {
        let tooMany = Dictionary(uniqueKeysWithValues: (0...ExtendedAttributes.maximumCount).map { ("n\($0)", "v") })
        let refused: [(String, [String: String])] = [
            ("129 attributes", tooMany),
            ("empty name", ["": "v"]),
            ("1,025-byte name", [String(repeating: "n", count: 1_025): "v"]),
            ("1,025-byte name of 1,023 ASCII and one é", [String(repeating: "n", count: 1_023) + "é": "v"]),
            ("16,385-byte value", ["n": String(repeating: "v", count: 16_385)]),
            ("16,385-byte value of 8,192 é and one ASCII", ["n": String(repeating: "é", count: 8_192) + "v"]),
            ("NUL in a name", ["a\u{0}b": "v"]),
            ("NUL ending a name", ["a\u{0}": "v"]),
            ("NUL in a value", ["n": "v\u{0}w"]),
            ("NUL alone as a value", ["n": "\u{0}"]),
        ]
        for (name, values) in refused {
            expectKeychainError(.invalidParameter, status: .param, "\(name)") { try ExtendedAttributes(values).validate() }
        }
        // The limits themselves are accepted, counted in UTF-8 bytes.
        let most = Dictionary(uniqueKeysWithValues: (0..<ExtendedAttributes.maximumCount).map { ("n\($0)", "v") })
        let accepted: [(String, [String: String])] = [
            ("no attributes", [:]),
            ("128 attributes", most),
            ("1,024-byte name", [String(repeating: "n", count: 1_024): "v"]),
            ("1,024-byte name of 512 é", [String(repeating: "é", count: 512): "v"]),
            ("16,384-byte value", ["n": String(repeating: "v", count: 16_384)]),
            ("16,384-byte value of 8,192 é", ["n": String(repeating: "é", count: 8_192)]),
            ("empty value", ["n": ""]),
            ("one-byte name", ["n": "v"]),
        ]
        for (name, values) in accepted {
            #expect(throws: Never.self, "\(name)") { try ExtendedAttributes(values).validate() }
        }
    }

    // MARK: 3. Search by any subset

    /// The attributes of item `i` of the many-items test: nil for no `xatr` at all, and an empty set for some.
    static func manyModel(_ i: Int) -> [String: String]? {
        if i % 10 == 0 { return nil }
        if i % 10 == 9 { return [:] }
        var attributes = [
            "xattr-name-schema": "xattr-value-" + ["alpha", "beta", "gamma"][i % 3],
            "xattr-name-mod5": "xattr-value-\(i % 5)",
            "xattr-name-owner": "xattr-value-user-\(i % 7)",
        ]
        if i % 2 == 0 { attributes["xattr-name-unique"] = "xattr-value-u\(i)" }
        if i % 4 == 1 { attributes["xattr-name-città"] = "xattr-value-\(i % 3)-über" }
        return attributes
    }

    static let manyCount = 300

    @Test func anySubsetFindsExactlyTheItemsCarryingIt() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        var uuids: [Int: Data] = [:]
        for i in 0..<Self.manyCount {
            uuids[i] = try Self.add(engine, "item-\(i)", Self.manyModel(i)).uuid
        }
        func expected(_ match: [String: String]) -> Set<String> {
            Set(
                (0..<Self.manyCount).filter { i in
                    match.isEmpty || Self.manyModel(i).map { model in match.allSatisfy { model[$0.key] == $0.value } } == true
                }.map { "item-\($0)" })
        }
        let item42 = try #require(Self.manyModel(42))
        let matches: [[String: String]] = [
            // One pair.
            ["xattr-name-schema": "xattr-value-alpha"],
            ["xattr-name-mod5": "xattr-value-3"],
            ["xattr-name-unique": "xattr-value-u42"],
            ["xattr-name-città": "xattr-value-2-über"],
            // Two pairs.
            ["xattr-name-schema": "xattr-value-beta", "xattr-name-mod5": "xattr-value-3"],
            ["xattr-name-owner": "xattr-value-user-4", "xattr-name-città": "xattr-value-1-über"],
            // Three.
            ["xattr-name-schema": "xattr-value-gamma", "xattr-name-mod5": "xattr-value-2", "xattr-name-owner": "xattr-value-user-4"],
            // All of one item's pairs: that item alone.
            item42,
            // A pair with a value no item has, alone and with a pair many items have.
            ["xattr-name-mod5": "xattr-value-7"],
            ["xattr-name-schema": "xattr-value-alpha", "xattr-name-mod5": "xattr-value-nope"],
            // Pairs each carried by some items, never together.
            ["xattr-name-schema": "xattr-value-alpha", "xattr-name-unique": "xattr-value-u1"],
            ["xattr-name-unique": "xattr-value-u2", "xattr-name-città": "xattr-value-2-über"],
            // A name with another name's value, and name and value swapped.
            ["xattr-name-owner": "xattr-value-alpha"],
            ["xattr-value-alpha": "xattr-name-schema"],
            // The separator of the index term inside a query: it can meet no stored pair.
            ["xattr-name-schema\u{0}xattr-value": "alpha"],
            ["xattr-name": "schema\u{0}xattr-value-alpha"],
            // A prefix of a value, and a case change.
            ["xattr-name-schema": "xattr-value-alph"],
            ["xattr-name-schema": "xattr-value-Alpha"],
            // Empty: every item, with or without attributes.
            [:],
        ]
        for match in matches {
            try Self.expectFound(engine, match, expected(match))
        }
        #expect(expected(item42) == ["item-42"])
        #expect(expected([:]).count == Self.manyCount)

        // The attributes come back as added.
        for item in try engine.find(Self.query(["xattr-name-mod5": "xattr-value-1"]), caller: Self.caller) {
            let account = try #require(item.attributes["acct"]?.stringValue)
            let index = try #require(Int(account.dropFirst("item-".count)))
            guard case .data(let encoded)? = item.attributes[ExtendedAttributes.code] else {
                Issue.record("\(account) came back without xatr"); continue
            }
            #expect(try ExtendedAttributes(encoded: encoded).values == Self.manyModel(index))
        }

        // With ordinary attributes in the same query, and returning only the secret (the engine then opens only
        // the attributes it matches on).
        var withAccount = Self.query(["xattr-name-schema": "xattr-value-alpha"])
        withAccount.attributes["acct"] = .string("item-42")
        #expect(try engine.find(withAccount, caller: Self.caller).count == 1)
        withAccount.attributes["acct"] = .string("item-43")
        expectKeychainError(.itemNotFound) { try engine.find(withAccount, caller: Self.caller) }
        var dataOnly = ItemQuery(itemClass: .genericPassword)
        dataOnly.returns.data = true
        dataOnly.extendedMatch = ["xattr-name-unique": "xattr-value-u42"]
        #expect(try engine.find(dataOnly, caller: Self.caller).map(\.data) == [Data("secret-item-42".utf8)])
        dataOnly.limit = .all
        dataOnly.extendedMatch = ["xattr-name-schema": "xattr-value-beta", "xattr-name-mod5": "xattr-value-3"]
        #expect(
            Set(try engine.find(dataOnly, caller: Self.caller).compactMap(\.data))
                == Set(expected(dataOnly.extendedMatch).map { Data("secret-\($0)".utf8) }))

        // Another class never matches free-form attributes.
        var internet = ItemQuery(itemClass: .internetPassword)
        internet.attributes["srvr"] = .string("example.org")
        internet.valueData = Data("x".utf8)
        _ = try engine.add(internet, caller: Self.caller)
        internet.valueData = nil
        internet.extendedMatch = ["xattr-name-schema": "xattr-value-alpha"]
        expectKeychainError(.itemNotFound) { try engine.find(internet, caller: Self.caller) }

        // In the file: one row per pair, for the right item, under the engine's key.
        let rows = try Self.indexRows(folder)
        let pairs = (0..<Self.manyCount).map { Self.manyModel($0)?.count ?? 0 }
        #expect(rows.total == pairs.reduce(0, +))
        #expect(rows.orphans == 0)
        for i in 0..<Self.manyCount {
            let uuid = try #require(uuids[i])
            #expect(rows.byItem[uuid] == pairs[i], "item-\(i)")
        }
        #expect(try Self.storedHashes(folder, try #require(uuids[42])) == Self.expectedHashes(engine, item42))
        #expect(try Self.storedHashes(folder, try #require(uuids[10])).isEmpty)
        #expect(try Self.storedHashes(folder, try #require(uuids[19])).isEmpty)

        // No name or value is anywhere in the clear: not in the database, its WAL or shared memory, open or closed.
        func expectNothingInTheClear(_ when: String) throws {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("keychain-2.db") }
            #expect(files.contains("keychain-2.db"))
            // The scan reads what SQLite wrote: the header and the schema's own text are there in the clear.
            let database = try Data(contentsOf: URL(fileURLWithPath: folder.location.databasePath))
            #expect(database.range(of: Data("SQLite format 3".utf8)) != nil)
            #expect(database.range(of: Data("CREATE TABLE \"genp_xattr\"".utf8)) != nil)
            let markers = ["xattr-name-", "xattr-value-", "über", "città", "secret-item-"].map { Data($0.utf8) }
            for file in files {
                let contents = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + file))
                for marker in markers {
                    #expect(contents.range(of: marker) == nil, "\(String(decoding: marker, as: UTF8.self)) in \(file) (\(when))")
                }
            }
        }
        try expectNothingInTheClear("open")
        try engine.close()
        try expectNothingInTheClear("closed")
    }

    // MARK: 4. Update

    @Test func updatingXatrReindexesAndOtherUpdatesLeaveTheIndex() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        let old = ["schema": "alpha", "user": "alice", "host": "one.example"]
        let a = try Self.add(engine, "a", old)
        let b = try Self.add(engine, "b", ["schema": "alpha", "user": "bob"])
        var byAccount = ItemQuery(itemClass: .genericPassword)
        byAccount.attributes["acct"] = .string("a")

        // New attributes: the old pairs no longer match, the new ones do, and the rows are the new set's.
        let new = ["schema": "beta", "user": "alice", "port": "443"]
        try engine.update(
            byAccount, attributes: [ExtendedAttributes.code: .data(ExtendedAttributes(new).encoded)],
            sync: nil, data: nil, caller: Self.caller)
        try Self.expectFound(engine, ["schema": "alpha"], ["b"])
        try Self.expectFound(engine, ["host": "one.example"], [])
        try Self.expectFound(engine, ["schema": "alpha", "user": "alice"], [])
        try Self.expectFound(engine, ["schema": "beta"], ["a"])
        try Self.expectFound(engine, ["port": "443", "user": "alice"], ["a"])
        try Self.expectFound(engine, new, ["a"])
        var rows = try Self.indexRows(folder)
        #expect(rows.byItem[a.uuid] == 3)
        #expect(rows.byItem[b.uuid] == 2)
        #expect(rows.total == 5)
        #expect(try Self.storedHashes(folder, a.uuid) == Self.expectedHashes(engine, new))
        #expect(try Self.storedHashes(folder, b.uuid) == Self.expectedHashes(engine, ["schema": "alpha", "user": "bob"]))

        // Other attributes, the secret, even the primary key: the index stays as it was.
        let before = try Self.storedHashes(folder, a.uuid)
        try engine.update(
            byAccount, attributes: ["gena": .data(Data([1, 2, 3])), "labl": .string("label")],
            sync: nil, data: Data("new secret".utf8), caller: Self.caller)
        try engine.update(byAccount, attributes: ["acct": .string("a2")], sync: nil, data: nil, caller: Self.caller)
        #expect(try Self.storedHashes(folder, a.uuid) == before)
        try Self.expectFound(engine, new, ["a2"])
        rows = try Self.indexRows(folder)
        #expect(rows.total == 5)
        #expect(rows.orphans == 0)

        // Several items updated at once: each re-indexed.
        let shared = ["schema": "gamma", "owner": "team"]
        var matchBoth = ItemQuery(itemClass: .genericPassword)
        matchBoth.attributes["svce"] = .string("svc")
        try engine.update(
            matchBoth, attributes: [ExtendedAttributes.code: .data(ExtendedAttributes(shared).encoded)],
            sync: nil, data: nil, caller: Self.caller)
        try Self.expectFound(engine, shared, ["a2", "b"])
        try Self.expectFound(engine, ["schema": "beta"], [])
        rows = try Self.indexRows(folder)
        #expect(rows.byItem[a.uuid] == 2)
        #expect(rows.byItem[b.uuid] == 2)
        #expect(rows.total == 4)

        // Updating by a free-form match to an empty set: no rows left, the items still found without a match.
        var byOwner = ItemQuery(itemClass: .genericPassword)
        byOwner.extendedMatch = ["owner": "team"]
        try engine.update(
            byOwner, attributes: [ExtendedAttributes.code: .data(ExtendedAttributes().encoded)],
            sync: nil, data: nil, caller: Self.caller)
        try Self.expectFound(engine, ["owner": "team"], [])
        try Self.expectFound(engine, [:], ["a2", "b"])
        #expect(try Self.indexRows(folder).total == 0)

        // A malformed or over-limit set is refused, and nothing changes.
        try engine.update(
            byAccount.renamed("a2"), attributes: [ExtendedAttributes.code: .data(ExtendedAttributes(old).encoded)],
            sync: nil, data: nil, caller: Self.caller)
        for bad in Self.badXatrValues {
            expectKeychainError(.invalidParameter, status: .param, "\(bad.0)") {
                try engine.update(byAccount.renamed("a2"), attributes: [ExtendedAttributes.code: bad.1], sync: nil, data: nil, caller: Self.caller)
            }
        }
        try Self.expectFound(engine, old, ["a2"])
        #expect(try Self.storedHashes(folder, a.uuid) == Self.expectedHashes(engine, old))
        #expect(try Self.indexRows(folder).total == 3)
        try engine.close()
    }

    /// The index belongs to generic passwords: an update of another class's item that carries `xatr` (possible
    /// through the engine's API, though the parser refuses it) must not touch the rows of the generic password that
    /// has the same rowid in its own table.
    @Test func anotherClassesUpdateLeavesTheIndexOfTheSameRowid() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        let password = try Self.add(engine, "a", ["schema": "alpha"])
        var internet = ItemQuery(itemClass: .internetPassword)
        internet.attributes["srvr"] = .string("example.org")
        internet.valueData = Data("x".utf8)
        _ = try engine.add(internet, caller: Self.caller)
        let rowids = try Self.raw(folder) { db in
            (try Int64.fetchOne(db, sql: "SELECT rowid FROM genp"), try Int64.fetchOne(db, sql: "SELECT rowid FROM inet"))
        }
        #expect(rowids.0 != nil)
        #expect(rowids.0 == rowids.1, "the two items share a rowid, each in its table")
        internet.valueData = nil
        try engine.update(
            internet, attributes: [ExtendedAttributes.code: .data(ExtendedAttributes().encoded)],
            sync: nil, data: nil, caller: Self.caller)
        #expect(try Self.indexRows(folder).byItem[password.uuid] == 1)
        try Self.expectFound(engine, ["schema": "alpha"], ["a"])
        try engine.close()
    }

    // MARK: 5. Delete

    @Test func deletingRemovesTheIndexRows() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        var rowids: [Int64: Int] = [:]
        for i in 0..<20 {
            let item = try Self.add(engine, "d\(i)", ["parity": i % 2 == 0 ? "even" : "odd", "n": "\(i)", "third": "\(i % 3)"])
            let rowid = try Self.raw(folder) { db in try Int64.fetchOne(db, sql: "SELECT rowid FROM genp WHERE uuid = ?", arguments: [item.uuid]) }
            rowids[try #require(rowid)] = i
        }
        #expect(try Self.indexRows(folder).total == 60)

        // By an ordinary attribute.
        var one = ItemQuery(itemClass: .genericPassword)
        one.attributes["acct"] = .string("d4")
        #expect(try engine.delete(one, caller: Self.caller) == 1)
        try Self.expectFound(engine, ["n": "4"], [])
        var rows = try Self.indexRows(folder)
        #expect(rows.total == 57)
        #expect(rows.orphans == 0)

        // By a free-form match: every item carrying it, and their rows.
        var odd = ItemQuery(itemClass: .genericPassword)
        odd.extendedMatch = ["parity": "odd"]
        #expect(try engine.delete(odd, caller: Self.caller) == 10)
        try Self.expectFound(engine, ["parity": "odd"], [])
        try Self.expectFound(engine, ["third": "0"], ["d0", "d6", "d12", "d18"])
        rows = try Self.indexRows(folder)
        #expect(rows.total == 27)
        #expect(rows.orphans == 0)
        var both = ItemQuery(itemClass: .genericPassword)
        both.extendedMatch = ["parity": "even", "third": "1"]
        #expect(try engine.delete(both, caller: Self.caller) == 2)  // d10 and d16: d4 is gone
        expectKeychainError(.itemNotFound) { try engine.delete(both, caller: Self.caller) }
        #expect(try Self.indexRows(folder).total == 21)

        // The highest rowids are taken again by the next inserts (genp has no AUTOINCREMENT): the new item
        // inherits nothing of the deleted item whose rowid it has.
        var last = ItemQuery(itemClass: .genericPassword)
        last.attributes["acct"] = .string("d18")
        #expect(try engine.delete(last, caller: Self.caller) == 1)
        let fresh = try Self.add(engine, "fresh", nil)
        let freshRowid = try #require(
            try Self.raw(folder) { db in
                try Int64.fetchOne(db, sql: "SELECT rowid FROM genp WHERE uuid = ?", arguments: [fresh.uuid])
            })
        let previous = try #require(rowids[freshRowid], "the new item took a deleted item's rowid")
        #expect(previous == 15, "one more than d14's, the highest left")
        try Self.expectFound(engine, ["n": "\(previous)"], [])
        try Self.expectFound(engine, ["n": "18"], [])
        try Self.expectFound(engine, ["parity": "even"], ["d0", "d2", "d6", "d8", "d12", "d14"])
        rows = try Self.indexRows(folder)
        #expect(rows.byItem[fresh.uuid] == 0)
        #expect(rows.total == 18)
        #expect(rows.orphans == 0)

        // A synchronizable item leaves a tombstone, which no search meets; its twin added again is indexed anew, and
        // takes the deleted item's identity (to sync, the same item deleted and written again).
        let first = try Self.add(engine, "synced", ["kind": "synced", "v": "1"], synchronizable: true)
        try Self.expectFound(engine, ["kind": "synced"], ["synced"], sync: .any)
        var synced = ItemQuery(itemClass: .genericPassword)
        synced.sync = .any
        synced.extendedMatch = ["kind": "synced"]
        #expect(try engine.delete(synced, caller: Self.caller) == 1)
        try Self.expectFound(engine, ["kind": "synced"], [], sync: .any)
        let again = try Self.add(engine, "synced", ["kind": "synced", "v": "2"], synchronizable: true)
        #expect(again.uuid == first.uuid)
        try Self.expectFound(engine, ["v": "1"], [], sync: .any)
        try Self.expectFound(engine, ["kind": "synced", "v": "2"], ["synced"], sync: .any)
        rows = try Self.indexRows(folder)
        #expect(rows.byItem[again.uuid] == 2)
        #expect(rows.orphans == 0)
        #expect(rows.total == 20)
        try engine.close()
    }

    /// Removing the passcode deletes WhenPasscodeSetThisDeviceOnly items with one DELETE per table: the trigger
    /// takes their index rows too.
    @Test func removingThePasscodeRemovesThePasscodeOnlyItemsRows() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        try engine.changePasscode(from: nil, to: "1234")
        let kept = try Self.add(engine, "kept", ["schema": "alpha", "who": "kept"])
        let gone = try Self.add(engine, "gone", ["schema": "alpha", "who": "gone"], protection: .whenPasscodeSetThisDeviceOnly)
        try Self.expectFound(engine, ["schema": "alpha"], ["kept", "gone"])
        var rows = try Self.indexRows(folder)
        #expect(rows.byItem[gone.uuid] == 2)
        #expect(rows.total == 4)

        try engine.changePasscode(from: "1234", to: nil)
        try Self.expectFound(engine, ["schema": "alpha"], ["kept"])
        try Self.expectFound(engine, ["who": "gone"], [])
        rows = try Self.indexRows(folder)
        #expect(rows.byItem[gone.uuid] == nil)
        #expect(rows.byItem[kept.uuid] == 2)
        #expect(rows.total == 2)
        #expect(rows.orphans == 0)
        try engine.close()
    }

    // MARK: 6. Refused adds

    static let badXatrValues: [(String, AttributeValue)] = {
        var tooMany = BinaryWriter()
        tooMany.u8(1)
        tooMany.u16(129)
        for i in 0..<129 {
            tooMany.lengthPrefixedUTF8("n\(i)")
            tooMany.lengthPrefixedUTF8("v")
        }
        return [
            ("a string, not the encoded form", .string("schema=alpha")),
            ("an integer", .int(1)),
            ("wrong version", .data(Data([2, 0, 0]))),
            ("empty", .data(Data())),
            ("truncated", .data(ExtendedAttributes(["a": "b"]).encoded.dropLast())),
            ("trailing bytes", .data(ExtendedAttributes(["a": "b"]).encoded + [0])),
            ("invalid UTF-8", .data(Data(unhex("010001" + "00000001" + "ff" + "00000001" + "62")))),
            ("129 attributes", .data(tooMany.data)),
            ("a 1,025-byte name", .data(ExtendedAttributes([String(repeating: "n", count: 1_025): "v"]).encoded)),
            ("a 16,385-byte value", .data(ExtendedAttributes(["n": String(repeating: "v", count: 16_385)]).encoded)),
            ("an empty name", .data(ExtendedAttributes(["": "v"]).encoded)),
            ("a NUL in a name", .data(ExtendedAttributes(["a\u{0}b": "v"]).encoded)),
            ("a NUL in a value", .data(ExtendedAttributes(["n": "v\u{0}"]).encoded)),
        ]
    }()

    @Test func aMalformedOrOverLimitSetIsRefusedAndNothingIsStored() throws {
        let folder = Folder()
        let engine = try Self.engine(folder)
        for (name, value) in Self.badXatrValues {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes["acct"] = .string("refused")
            q.attributes[ExtendedAttributes.code] = value
            q.valueData = Data("secret".utf8)
            expectKeychainError(.invalidParameter, status: .param, "\(name)") { try engine.add(q, caller: Self.caller) }
        }
        var byAccount = ItemQuery(itemClass: .genericPassword)
        byAccount.attributes["acct"] = .string("refused")
        expectKeychainError(.itemNotFound) { try engine.find(byAccount, caller: Self.caller) }
        let counts = try Self.raw(folder) { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM genp"), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM genp_xattr"))
        }
        #expect(counts.0 == 0)
        #expect(counts.1 == 0)
        // The largest set accepted is stored, and found by its largest pair.
        let name = String(repeating: "n", count: 1_024), value = String(repeating: "v", count: 16_384)
        var most = Dictionary(uniqueKeysWithValues: (0..<127).map { ("n\($0)", "v\($0)") })
        most[name] = value
        let item = try Self.add(engine, "most", most)
        try Self.expectFound(engine, [name: value], ["most"])
        try Self.expectFound(engine, [name: value, "n5": "v5"], ["most"])
        #expect(try Self.indexRows(folder).byItem[item.uuid] == 128)
        try engine.close()
    }

    // MARK: 7. Migration

    @Test func aVersion1DatabaseIsMigratedAndALaterOneRefused() throws {
        let folder = Folder()
        var engine = try Self.engine(folder)
        for i in 0..<5 { try Self.add(engine, "old\(i)", nil) }
        var internet = ItemQuery(itemClass: .internetPassword)
        internet.attributes["srvr"] = .string("example.org")
        internet.valueData = Data("x".utf8)
        _ = try engine.add(internet, caller: Self.caller)
        try engine.close()

        // Back to version 1's schema: the same tables, without the index of free-form attributes.
        try Self.raw(folder, writable: true) { db in
            try db.execute(
                sql: """
                    DROP TRIGGER "genp_xattr_gone";
                    DROP TABLE "genp_xattr";
                    PRAGMA user_version = 1;
                    """)
        }
        #expect(try Self.integer(folder, "PRAGMA user_version") == 1)
        #expect(try Self.integer(folder, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'genp_xattr%' OR sql LIKE '%genp_xattr%'") == 0)
        #expect(try Self.integer(folder, "SELECT COUNT(*) FROM genp") == 5)

        engine = try Self.engine(folder)
        #expect(try Self.integer(folder, "PRAGMA user_version") == KeychainEngine.schemaVersion)
        let objects = try Self.raw(folder) { db in
            try Row.fetchAll(db, sql: "SELECT type, name, tbl_name FROM sqlite_master WHERE name LIKE 'genp_xattr%' ORDER BY name")
                .map { "\($0[0] as String) \($0[1] as String) \($0[2] as String)" }
        }
        #expect(objects == ["table genp_xattr genp_xattr", "trigger genp_xattr_gone genp", "index genp_xattr_item genp_xattr"])
        // The old items are all there, and the new ones are indexed and unindexed as on a new keychain.
        try Self.expectFound(engine, [:], Set((0..<5).map { "old\($0)" }))
        internet.valueData = nil
        #expect(try engine.find(internet, caller: Self.caller).count == 1)
        let new = try Self.add(engine, "new", ["schema": "alpha"])
        try Self.expectFound(engine, ["schema": "alpha"], ["new"])
        var old = ItemQuery(itemClass: .genericPassword)
        old.attributes["acct"] = .string("old0")
        #expect(try engine.delete(old, caller: Self.caller) == 1)
        #expect(try Self.indexRows(folder).byItem[new.uuid] == 1)
        var byMatch = ItemQuery(itemClass: .genericPassword)
        byMatch.extendedMatch = ["schema": "alpha"]
        #expect(try engine.delete(byMatch, caller: Self.caller) == 1)
        #expect(try Self.indexRows(folder).total == 0, "the migration's trigger removed the rows")
        try engine.close()

        // Opening it again changes nothing.
        engine = try Self.engine(folder)
        try Self.expectFound(engine, [:], Set((1..<5).map { "old\($0)" }))
        try engine.close()

        // A later schema than this build knows is refused, and left as it is.
        let later = KeychainEngine.schemaVersion + 1
        try Self.raw(folder, writable: true) { db in try db.execute(sql: "PRAGMA user_version = \(later)") }
        let error = expectKeychainError(.notAvailable, status: .wrongSecVersion) { try Self.engine(folder) }
        #expect(error?.message.contains("schema version \(later)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Upgrade swift-keychain") == true, "\(error?.message ?? "")")
        #expect(try Self.integer(folder, "PRAGMA user_version") == later)
        #expect(try Self.integer(folder, "SELECT COUNT(*) FROM genp") == 4)
    }

    // MARK: 8. Backup and restore

    @Test func restoredItemsAreFoundByTheirAttributes() throws {
        let source = Folder()
        let engine = try Self.engine(source)
        let attributes = ["xdg:schema": "org.example.Mail", "user": "alice", "server": "imap.example.org"]
        try Self.add(engine, "mail", attributes)
        try Self.add(engine, "chat", ["xdg:schema": "org.example.Chat", "user": "alice"])
        try Self.add(engine, "plain", nil)
        let backup = try engine.backup(password: "backup password")
        #expect(backup.summary.items == 3)

        // Into a new keychain: other keys, so other hashes, computed on the way in.
        let target = Folder()
        let clock = Clock(1_000_000_000)  // 2001: whatever it holds is older than the backup's items
        let restored = try Self.engine(target, clock: clock)
        let older = try Self.add(restored, "mail", ["xdg:schema": "org.example.Mail", "user": "old-alice", "stale": "yes"])
        #expect(try Self.indexRows(target).byItem[older.uuid] == 3)
        let summary = try restored.restore(backup.data, password: "backup password")
        #expect(summary.added == 2)
        #expect(summary.replaced == 1)
        try Self.expectFound(restored, ["user": "alice"], ["mail", "chat"])
        try Self.expectFound(restored, attributes, ["mail"])
        try Self.expectFound(restored, ["xdg:schema": "org.example.Chat"], ["chat"])
        try Self.expectFound(restored, ["stale": "yes"], [])
        try Self.expectFound(restored, ["user": "old-alice"], [])
        try Self.expectFound(restored, [:], ["mail", "chat", "plain"])
        let mail = try #require(try restored.find(Self.query(attributes), caller: Self.caller).first)
        #expect(try Self.storedHashes(target, mail.uuid) == Self.expectedHashes(restored, attributes))
        #expect(Self.expectedHashes(restored, attributes) != Self.expectedHashes(engine, attributes), "each keychain its own key")
        let rows = try Self.indexRows(target)
        #expect(rows.total == 5)
        #expect(rows.orphans == 0)
        #expect(rows.byItem[older.uuid] == nil, "the replaced item's rows went with it")

        // Restoring again keeps what is as new, and the index as it is.
        let again = try restored.restore(backup.data, password: "backup password")
        #expect(again.keptNewer == 3)
        #expect(try Self.indexRows(target).total == 5)
        try restored.close()
        try engine.close()
    }
}

private extension ItemQuery {
    /// This query for another account.
    func renamed(_ account: String) -> ItemQuery {
        var q = self
        q.attributes["acct"] = .string(account)
        return q
    }
}
