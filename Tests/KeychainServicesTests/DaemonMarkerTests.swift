import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `keychaind.serves`, the file keychaind leaves in a keychain it serves, keeps programs from opening that
/// keychain themselves while keychaind is stopped. A marker that is there but cannot be used (unreadable, a link,
/// damaged) must fail closed as well: before, any of these made the program open the store itself, bypassing
/// keychaind's decisions.
@Suite struct DaemonMarkerTests {
    /// A keychain with one item of the group `stranger` (the group the test program of that name had before 0.30,
    /// run in-process without entitlements; it is moved to the program's path when the program asks), and a marker
    /// of the given kind planted in its folder.
    func keychain(withMarker plant: (String) throws -> Void) throws -> DaemonFixture {
        let f = try DaemonFixture()
        var query = ItemQuery(itemClass: .genericPassword)
        query.attributes["acct"] = .string("crown")
        query.attributes["svce"] = .string("svc")
        query.valueData = Data("jewels".utf8)
        _ = try f.engine.add(query, caller: AccessPolicy(groups: ["stranger"]))
        try plant(KeychainLocation(home: f.home).daemonMarkerPath)
        return f
    }

    @Test(arguments: ["empty", "relative path", "folder", "link"])
    func aMarkerThatNamesNoSocketStillFailsClosed(kind: String) throws {
        let f = try keychain { marker in
            switch kind {
            case "empty": try Data().write(to: URL(fileURLWithPath: marker))
            case "relative path": try Data("keychaind.sock\n".utf8).write(to: URL(fileURLWithPath: marker))
            case "folder": try FileManager.default.createDirectory(atPath: marker, withIntermediateDirectories: false)
            default: try FileManager.default.createSymbolicLink(atPath: marker, withDestinationPath: "/dev/null")
            }
        }
        let run = try runProgram(
            try f.program("stranger"), ["find", "crown", "svc"],
            environment: baseEnvironment(home: f.home))
        #expect(run.stdout == "status=-25291\n", "\(kind): \(run.stdout)\(run.stderr)")
    }

    /// The same keychain without a marker is opened in-process, as before (the embedded mode): the refusal above
    /// comes from the marker alone.
    @Test func withoutAMarkerTheKeychainOpensInProcess() throws {
        let f = try keychain { _ in }
        let run = try runProgram(
            try f.program("stranger"), ["find", "crown", "svc"],
            environment: baseEnvironment(home: f.home))
        let stranger = URL(fileURLWithPath: try f.program("stranger")).resolvingSymlinksInPath().path
        #expect(run.stdout == "status=0\ndata=jewels\nagrp=\(stranger)\n", "\(run.stdout)\(run.stderr)")
    }
}
