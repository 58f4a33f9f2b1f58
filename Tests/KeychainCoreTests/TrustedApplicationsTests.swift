import Foundation
import GRDB
import KeychainTestSupport
import Testing
@testable import KeychainCore

/// Items' trusted applications (`xtap`) in the engine: who finds an item through its list (and who does not), that
/// the list gives reading only, the upkeep of its index (`trusted_apps`) on update and delete, and the migration of a
/// version-2 database.
@Suite struct TrustedApplicationsTests {
    typealias Fixture = ExtendedAttributesTests

    static let owner = AccessPolicy(groups: ["owner"])
    static let reader = AccessPolicy(groups: ["reader"]).trusted(as: "/usr/bin/reader")
    static let stranger = AccessPolicy(groups: ["stranger"]).trusted(as: "/usr/bin/stranger")
    /// An untrusted process of the reader's program: known by `*` and nothing else.
    static let injected = AccessPolicy(groups: ["untrusted:/usr/bin/reader"]).trusted(as: nil)

    @discardableResult
    static func add(
        _ engine: KeychainEngine, _ account: String, trusting terms: [String]?, caller: AccessPolicy = owner,
        itemClass: ItemClass = .genericPassword
    ) throws -> FoundItem {
        var q = ItemQuery(itemClass: itemClass)
        q.attributes["acct"] = .string(account)
        if let terms { q.attributes[TrustedApplications.code] = try TrustedApplications(terms).attributeValue }
        q.valueData = Data("secret-\(account)".utf8)
        return try engine.add(q, caller: caller)
    }

    static func find(
        _ engine: KeychainEngine, _ account: String? = nil, as caller: AccessPolicy, limit: MatchLimit = .all,
        itemClass: ItemClass = .genericPassword
    ) throws -> [FoundItem] {
        var q = ItemQuery(itemClass: itemClass)
        if let account { q.attributes["acct"] = .string(account) }
        q.limit = limit
        q.returns.data = true
        q.returns.attributes = true
        return try engine.find(q, caller: caller)
    }

    static func accounts(_ engine: KeychainEngine, as caller: AccessPolicy, itemClass: ItemClass = .genericPassword) -> [String] {
        (try? find(engine, as: caller, itemClass: itemClass))?.compactMap { $0.attributes["acct"]?.stringValue } ?? []
    }

    static func indexRows(_ folder: Fixture.Folder) throws -> Int {
        try Fixture.integer(folder, "SELECT COUNT(*) FROM \"\(TrustedApplications.indexTable)\"") ?? -1
    }

    @Test func aTrustedProgramFindsAndReadsTheItemAndNoOtherDoes() throws {
        let folder = Fixture.Folder()
        let engine = try Fixture.engine(folder)
        try Self.add(engine, "shared", trusting: ["/usr/bin/reader", "flatpak:org.example.App"])
        try Self.add(engine, "private", trusting: nil)
        try Self.add(engine, "open", trusting: ["*"])
        let found = try Self.find(engine, "shared", as: Self.reader)
        #expect(found.map(\.data) == [Data("secret-shared".utf8)])
        #expect(found.first?.attributes["agrp"] == .string("owner"))
        #expect(Set(Self.accounts(engine, as: Self.reader)) == ["shared", "open"])
        #expect(Self.accounts(engine, as: Self.stranger) == ["open"])
        #expect(Self.accounts(engine, as: Self.injected) == ["open"], "an untrusted process is no trusted path")
        #expect(Self.accounts(engine, as: AccessPolicy(groups: ["plain"])) == [], "a caller known by no term")
        #expect(Set(Self.accounts(engine, as: AccessPolicy(groups: ["x"]).trusted(as: "flatpak:org.example.App"))) == ["shared", "open"])
        // Asking for a group by name reaches that group only.
        var named = ItemQuery(itemClass: .genericPassword)
        named.attributes["agrp"] = .string("reader")
        expectKeychainError(.itemNotFound) { try engine.find(named, caller: Self.reader) }
        // The other classes are untouched by a generic password's list (the hashes are per class).
        #expect(Self.accounts(engine, as: Self.reader, itemClass: .internetPassword) == [])
        try engine.close()
    }

    @Test func aProgramsOwnItemsComeFirst() throws {
        let folder = Fixture.Folder()
        let engine = try Fixture.engine(folder)
        try Self.add(engine, "same", trusting: ["/usr/bin/reader"])
        try Self.add(engine, "same", trusting: nil, caller: Self.reader)
        let all = try Self.find(engine, "same", as: Self.reader)
        #expect(all.map { $0.attributes["agrp"] } == [.string("reader"), .string("owner")])
        let one = try Self.find(engine, "same", as: Self.reader, limit: .one)
        #expect(one.map { $0.attributes["agrp"] } == [.string("reader")])
        try engine.close()
    }

    @Test func aTrustedProgramCannotChangeOrDeleteTheItemNorItsList() throws {
        let folder = Fixture.Folder()
        let engine = try Fixture.engine(folder)
        try Self.add(engine, "shared", trusting: ["/usr/bin/reader"])
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["acct"] = .string("shared")
        let widen = [TrustedApplications.code: try TrustedApplications(["/usr/bin/reader", "/usr/bin/stranger"]).attributeValue]
        for caller in [Self.reader, Self.stranger] {
            expectKeychainError(.itemNotFound) { try engine.update(q, attributes: widen, sync: nil, data: nil, caller: caller) }
            expectKeychainError(.itemNotFound) { try engine.update(q, attributes: [:], sync: nil, data: Data("x".utf8), caller: caller) }
            expectKeychainError(.itemNotFound) { try engine.delete(q, caller: caller) }
        }
        #expect(Self.accounts(engine, as: Self.stranger) == [])
        #expect(try Self.find(engine, "shared", as: Self.reader).first?.data == Data("secret-shared".utf8))
        try engine.close()
    }

    @Test func theIndexFollowsUpdatesAndDeletes() throws {
        let folder = Fixture.Folder()
        let engine = try Fixture.engine(folder)
        try Self.add(engine, "a", trusting: ["/usr/bin/reader", "teamid:ABCDE12345"])
        try Self.add(engine, "b", trusting: ["/usr/bin/reader"], itemClass: .internetPassword)
        try Self.add(engine, "c", trusting: [""])
        #expect(try Self.indexRows(folder) == 3)
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["acct"] = .string("a")
        // The owner moves the list to another program.
        try engine.update(
            q, attributes: [TrustedApplications.code: try TrustedApplications(["/usr/bin/stranger"]).attributeValue],
            sync: nil, data: nil, caller: Self.owner)
        #expect(try Self.indexRows(folder) == 2)
        #expect(Self.accounts(engine, as: Self.reader) == [])
        #expect(Self.accounts(engine, as: Self.stranger) == ["a"])
        // A program of team ABCDE12345 (by one of its groups) is no longer trusted either.
        #expect(Self.accounts(engine, as: AccessPolicy(groups: ["ABCDE12345.app"]).trusted(as: nil)) == [])
        // An empty list removes it.
        try engine.update(q, attributes: [TrustedApplications.code: .string("")], sync: nil, data: nil, caller: Self.owner)
        #expect(try Self.find(engine, "a", as: Self.owner).first?.attributes[TrustedApplications.code] == nil)
        #expect(try Self.indexRows(folder) == 1)
        var inet = ItemQuery(itemClass: .internetPassword)
        inet.attributes["acct"] = .string("b")
        #expect(try engine.delete(inet, caller: Self.owner) == 1)
        #expect(try Self.indexRows(folder) == 0, "the trigger removed the deleted item's rows")
        try engine.close()
    }

    @Test func teamTermsMatchProgramsWithAGroupOfThatTeam() throws {
        let folder = Fixture.Folder()
        let engine = try Fixture.engine(folder)
        try Self.add(engine, "team", trusting: ["teamid:ABCDE12345"])
        #expect(Self.accounts(engine, as: AccessPolicy(groups: ["ABCDE12345.com.example.app"]).trusted(as: "/usr/bin/x")) == ["team"])
        #expect(Self.accounts(engine, as: AccessPolicy(groups: ["ZZZZZ99999.com.example.app"]).trusted(as: "/usr/bin/x")) == [])
        #expect(TrustedApplications.team(ofGroup: "abcde12345.app") == nil)
        #expect(TrustedApplications.team(ofGroup: "/usr/bin/ABCDE12345.x") == nil)
        try engine.close()
    }

    @Test(arguments: ["relative/path", "/a/../b", "/a//b", "/a/./b", "flatpak:", "snap:a b", "teamid:x/y", "other:thing", "/a\nb"])
    func malformedTermsAreRefused(term: String) {
        expectKeychainError(.invalidParameter, "\(term)") { try TrustedApplications([term]) }
    }

    @Test func termsAreKeptInOrderWithoutRepeats() throws {
        let list = try TrustedApplications(["/b", "", "*", "/b", "apple-tool:", "apple:", "snap:x", "flatpak:org.a.B", "teamid:ABCDE12345"])
        #expect(list.terms == ["/b", "*", "apple-tool:", "apple:", "snap:x", "flatpak:org.a.B", "teamid:ABCDE12345"])
        #expect(TrustedApplications(stored: list.attributeValue) == list)
        #expect(try TrustedApplications([""]).isEmpty)
        expectKeychainError(.invalidParameter) { try TrustedApplications((0...TrustedApplications.maximumCount).map { "/p\($0)" }) }
    }

    @Test func aVersion2DatabaseIsMigrated() throws {
        let folder = Fixture.Folder()
        var engine = try Fixture.engine(folder)
        try Self.add(engine, "old", trusting: nil)
        try engine.close()
        try Fixture.raw(folder, writable: true) { db in
            for cls in ItemClass.stored { try db.execute(sql: "DROP TRIGGER \"trusted_apps_\(cls.table)_gone\"") }
            try db.execute(sql: "DROP TABLE \"trusted_apps\"; PRAGMA user_version = 2;")
        }
        engine = try Fixture.engine(folder)
        #expect(try Fixture.integer(folder, "PRAGMA user_version") == 3)
        #expect(try Fixture.integer(folder, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'trusted_apps%'") == 6)
        #expect(Self.accounts(engine, as: Self.owner) == ["old"])
        try Self.add(engine, "new", trusting: ["/usr/bin/reader"])
        #expect(Self.accounts(engine, as: Self.reader) == ["new"])
        try engine.close()
    }
}
