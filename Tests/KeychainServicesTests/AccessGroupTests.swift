import Foundation
import KeychainTestSupport
import Testing
import KeychainServices

@Suite struct AccessGroupTests {
    @Test(arguments: Backend.allCases) func firstGroupIsTheDefaultAndQueriesSeeOnlyEntitledGroups(_ backend: Backend) throws {
        let kc = try TestKeychain(backend, groups: ["TEAM.shared", "TEAM.com.example.app"])
        try kc.run {
            #expect(add(genp("a", "s")) == errSecSuccess)
            let attrs = try #require(copy(genp("a", "s", [kSecReturnAttributes as String: true])).1 as? [String: Any])
            #expect(attrs[kSecAttrAccessGroup as String] as? String == "TEAM.shared")
            #expect(add(genp("b", "s", [kSecAttrAccessGroup as String: "TEAM.com.example.app"])) == errSecSuccess)
            #expect(add(genp("c", "s", [kSecAttrAccessGroup as String: "OTHER.group"])) == errSecMissingEntitlement)
            // The same account and service in two groups are two items.
            #expect(add(genp("a", "s", [kSecAttrAccessGroup as String: "TEAM.com.example.app"])) == errSecSuccess)
        }
        // Another app that shares only the first group sees only that group's items.
        try kc.run(groups: ["TEAM.shared"]) {
            let all = try #require(copy(genp(nil, "s", [kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true])).1 as? [[String: Any]])
            #expect(all.count == 1)
            #expect(all.first?[kSecAttrAccount as String] as? String == "a")
            #expect(copy(genp("b", "s")).0 == errSecItemNotFound)
            #expect(copy(genp("b", "s", [kSecAttrAccessGroup as String: "TEAM.com.example.app"])).0 == errSecMissingEntitlement)
            #expect(SecItemUpdate(genp("b", "s") as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary) == errSecItemNotFound)
            #expect(SecItemDelete(genp("b", "s") as CFDictionary) == errSecItemNotFound)
            #expect(SecItemDelete(genp("b", "s", [kSecAttrAccessGroup as String: "TEAM.com.example.app"]) as CFDictionary) == errSecMissingEntitlement)
            #expect(SecItemUpdate(genp("a", "s") as CFDictionary, [kSecAttrAccessGroup as String: "TEAM.com.example.app"] as CFDictionary) == errSecMissingEntitlement)
        }
        // An unrelated app sees nothing.
        kc.run(groups: ["OTHER.app"]) {
            #expect(copy(genp(nil, "s")).0 == errSecItemNotFound)
        }
        // A process with no groups at all is refused outright.
        kc.run(groups: []) {
            #expect(add(genp("z", "s")) == errSecMissingEntitlement)
            #expect(copy(genp("a", "s")).0 == errSecMissingEntitlement)
            #expect(SecItemDelete(genp("a", "s") as CFDictionary) == errSecMissingEntitlement)
        }
    }

    @Test func entitlementsPlistFromTheEnvironment() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("kc-ent-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let plist = home + "-entitlements.plist"
        defer { try? FileManager.default.removeItem(atPath: plist) }
        let entitlements: [String: Any] = ["keychain-access-groups": ["TEAMID.shared"], "application-identifier": "TEAMID.com.example.app"]
        try PropertyListSerialization.data(fromPropertyList: entitlements, format: .xml, options: 0).write(to: URL(fileURLWithPath: plist))

        var env = baseEnvironment(home: home)
        env["KEYCHAIN_ENTITLEMENTS"] = plist
        var r = try runHelper(["add", "alice", "svc", "s3cret"], environment: env)
        #expect(r.stdout == "status=0\n")
        r = try runHelper(["find", "alice", "svc"], environment: env)
        #expect(r.stdout == "status=0\ndata=s3cret\nagrp=TEAMID.shared\n")
        // The application identifier is the second group.
        r = try runHelper(["add", "bob", "svc", "x", "TEAMID.com.example.app"], environment: env)
        #expect(r.stdout == "status=0\n")
        r = try runHelper(["add", "carol", "svc", "x", "SOMEONE.else"], environment: env)
        #expect(r.stdout == "status=-34018\n")

        // Without the variable, the process's only group is its executable's full path: the group keychaind gives it.
        let plain = baseEnvironment(home: home)
        r = try runHelper(["find", "alice", "svc"], environment: plain)
        #expect(r.stdout == "status=-25300\n")
        r = try runHelper(["add", "dave", "svc", "y"], environment: plain)
        #expect(r.stdout == "status=0\n")
        r = try runHelper(["find", "dave", "svc"], environment: plain)
        let helper = URL(fileURLWithPath: try BuiltProducts.path(of: "keychain-test-helper")).resolvingSymlinksInPath().path
        #expect(r.stdout == "status=0\ndata=y\nagrp=\(helper)\n")

        // A broken entitlements file is a missing entitlement, not a crash.
        try Data("not a plist".utf8).write(to: URL(fileURLWithPath: plist))
        r = try runHelper(["find", "alice", "svc"], environment: env)
        #expect(r.stdout == "status=-34018\n")
    }
}
