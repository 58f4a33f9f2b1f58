import Foundation
import KeychainCore
import Testing

/// Checks an item description line by line. `"<date cdat>"`/`"<date mdat>"` stand for a timedate line, checked
/// for macOS's shape (hex of `yyyyMMddHHmmssZ` plus NUL, then the escaped text) and for being recent.
func expectDescription(_ actual: String, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    let lines = actual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.count == expected.count + 1, "line count differs:\n\(actual)", sourceLocation: sourceLocation)
    #expect(lines.last == "", "output must end with a newline", sourceLocation: sourceLocation)
    for (line, want) in zip(lines, expected) {
        if want.hasPrefix("<date ") {
            let code = String(want.dropFirst(6).dropLast())
            #expect(isTimeDateLine(line, code: code), "not a timedate line for \(code): \(line)", sourceLocation: sourceLocation)
        } else {
            #expect(line == want, sourceLocation: sourceLocation)
        }
    }
}

func isTimeDateLine(_ line: String, code: String) -> Bool {
    let prefix = "    \"\(code)\"<timedate>=0x"
    guard line.hasPrefix(prefix) else { return false }
    let rest = line.dropFirst(prefix.count)
    guard let split = rest.range(of: "  \"") else { return false }
    let hex = String(rest[..<split.lowerBound])
    let quoted = String(rest[split.upperBound...])
    guard quoted.hasSuffix("\\000\"") else { return false }
    let text = String(quoted.dropLast(5))
    guard text.count == 15, text.hasSuffix("Z"), text.dropLast().allSatisfy(\.isNumber) else { return false }
    let expectedHex = (Array(text.utf8) + [0]).map { String(format: "%02X", $0) }.joined()
    guard hex == expectedHex else { return false }
    // The item was made moments ago: the printed GMT time must be within a few minutes of now.
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
    let digits = Array(text)
    func number(_ from: Int, _ count: Int) -> Int { Int(String(digits[from..<from + count])) ?? -1 }
    let components = DateComponents(
        year: number(0, 4), month: number(4, 2), day: number(6, 2),
        hour: number(8, 2), minute: number(10, 2), second: number(12, 2))
    guard let date = calendar.date(from: components) else { return false }
    return abs(date.timeIntervalSinceNow) < 600
}

/// The description `find-generic-password` prints for an item made by `add-generic-password -a -s -w`.
func genericDescription(
    _ sandbox: Sandbox, account: String, service: String, label: String? = nil,
    comment: String? = nil, creator: String? = nil, type: String? = nil
) -> [String] {
    func blob(_ value: String?) -> String { value.map { "\"\($0)\"" } ?? "<NULL>" }
    return [
        "keychain: \"\(sandbox.home)/keychain-2.db\"",
        "version: 512",
        "class: \"genp\"",
        "attributes:",
        "    0x00000007 <blob>=\(blob(label ?? service))",
        "    0x00000008 <blob>=<NULL>",
        "    \"acct\"<blob>=\(blob(account))",
        "<date cdat>",
        "    \"crtr\"<uint32>=\(blob(creator))",
        "    \"cusi\"<sint32>=<NULL>",
        "    \"desc\"<blob>=<NULL>",
        "    \"gena\"<blob>=<NULL>",
        "    \"icmt\"<blob>=\(blob(comment))",
        "    \"invi\"<sint32>=<NULL>",
        "<date mdat>",
        "    \"nega\"<sint32>=<NULL>",
        "    \"prot\"<blob>=<NULL>",
        "    \"scrp\"<sint32>=<NULL>",
        "    \"svce\"<blob>=\(blob(service))",
        "    \"type\"<uint32>=\(blob(type))",
    ]
}

let notFoundLine = "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n"
let duplicateLine = "security: SecKeychainItemCreateFromContent (<default>): The specified item already exists in the keychain.\n"

/// The generic-password verbs, run as a user would run them.
@Suite("security: generic passwords")
struct GenericPasswordTests {
    @Test("add, then find -w prints exactly the password and a newline", arguments: ToolMode.allCases)
    func addThenFindPasswordOnly(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            let found = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"])
            #expect(found.status == 0)
            #expect(found.stdout == "s3cret\n")
            #expect(found.stderr == "")
        }
    }

    @Test("find -g prints macOS's attribute block on stdout and the password on stderr", arguments: ToolMode.allCases)
    func findShowsAttributesAndPassword(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            let found = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-g"])
            #expect(found.status == 0)
            #expect(found.stderr == "password: \"s3cret\"\n")
            #expect(found.stdout.contains("class: \"genp\"\n"))
            #expect(found.stdout.contains("    \"acct\"<blob>=\"alice\"\n"))
            #expect(found.stdout.contains("    \"svce\"<blob>=\"example.com\"\n"))
            expectDescription(found.stdout, genericDescription(kc, account: "alice", service: "example.com"))

            // Without -g the secret appears nowhere.
            let plain = try kc.run(["find-generic-password", "-s", "example.com"])
            #expect(plain.status == 0)
            #expect(plain.stderr == "")
            #expect(!plain.stdout.contains("s3cret"))
            expectDescription(plain.stdout, genericDescription(kc, account: "alice", service: "example.com"))
        }
    }

    @Test("read-only verbs never create a keychain: they say there is none and exit 50")
    func readOnlyVerbsNeverCreateAKeychain() throws {
        try withKeychain { kc in
            let out = kc.root + "/out.backup"
            let verbs: [(arguments: [String], function: String)] = [
                (["find-generic-password", "-a", "a", "-s", "s"], "SecKeychainOpen"), (["find-internet-password", "-s", "example.com"], "SecKeychainOpen"),
                (["find-certificate", "-a"], "SecKeychainOpen"), (["find-identity"], "SecKeychainOpen"), (["dump-keychain"], "SecKeychainOpen"),
                (["show-keychain-info"], "SecKeychainCopySettings default"), (["export", "-t", "certs"], "SecKeychainOpen"),
                (["backup-keychain", "-o", out, "-P", "backup-pw"], "SecKeychainBackup"),
                (["export", "-f", "backup", "-P", "backup-pw", "-o", out], "SecKeychainItemExport"),
            ]
            for (verb, function) in verbs {
                let result = try kc.run(verb)
                #expect(result.status == KeychainStatus.noSuchKeychain.exitCode, "\(verb)")
                #expect(result.stdout == "", "\(verb)")
                let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
                #expect(lines.first == "security: \(function): The specified keychain could not be found.", "\(verb): \(result.stderr)")
                #expect(lines.count == 3 && lines[1].hasPrefix("security: There is no keychain in \(kc.home) "), "\(verb): says where it looked")
                #expect(result.stderr.contains("Add an item, or start keychaind, to create one"), "\(verb): says what to do")
                #expect(!FileManager.default.fileExists(atPath: kc.home), "\(verb) created the keychain")
                #expect(!FileManager.default.fileExists(atPath: out), "\(verb) wrote a file")
            }
        }
    }

    @Test("a find that matches nothing prints macOS's message and exits 44", arguments: ToolMode.allCases)
    func missExits44(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "someone", "-s", "elsewhere", "-w", "x"])
            let missing = try kc.run(["find-generic-password", "-a", "nobody", "-s", "nowhere", "-w"])
            #expect(missing.status == 44)
            #expect(missing.status == KeychainStatus.itemNotFound.exitCode)
            #expect(missing.stdout == "")
            #expect(missing.stderr == notFoundLine)

            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            let wrongAccount = try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com"])
            #expect(wrongAccount.status == 44)
            #expect(wrongAccount.stdout == "")
            #expect(wrongAccount.stderr == notFoundLine)
        }
    }

    @Test("adding the same account and service twice fails with 45", arguments: ToolMode.allCases)
    func duplicateAdd(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            let again = try kc.run(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "other"])
            #expect(again.status == 45)
            #expect(again.stdout == "")
            #expect(again.stderr == duplicateLine)
            let found = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-w"])
            #expect(found.stdout == "s3cret\n")
        }
    }

    @Test("-U updates the password and the given attributes, or adds when there is no item", arguments: ToolMode.allCases)
    func updateWithU(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-U", "-a", "alice", "-s", "example.com", "-w", "first"])
            try kc.succeed(["add-generic-password", "-U", "-a", "alice", "-s", "example.com", "-w", "second", "-j", "rotated"])
            let found = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com", "-g"])
            #expect(found.status == 0)
            #expect(found.stderr == "password: \"second\"\n")
            expectDescription(found.stdout, genericDescription(kc, account: "alice", service: "example.com", comment: "rotated"))
            let dump = try kc.run(["dump-keychain"])
            #expect(dump.stdout.components(separatedBy: "class: ").count == 2, "exactly one item")
        }
    }

    @Test("delete prints the item, deletes it, and a later find misses", arguments: ToolMode.allCases)
    func deleteThenFind(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            try kc.succeed(["add-generic-password", "-a", "bob", "-s", "example.com", "-w", "other"])
            let deleted = try kc.run(["delete-generic-password", "-a", "alice", "-s", "example.com"])
            #expect(deleted.status == 0)
            #expect(deleted.stderr == "password has been deleted.\n")
            #expect(!deleted.stdout.contains("s3cret"))
            expectDescription(deleted.stdout, genericDescription(kc, account: "alice", service: "example.com"))

            let missing = try kc.run(["find-generic-password", "-a", "alice", "-s", "example.com"])
            #expect(missing.status == 44)
            #expect(missing.stderr == notFoundLine)
            let other = try kc.run(["find-generic-password", "-a", "bob", "-s", "example.com", "-w"])
            #expect(other.stdout == "other\n")

            let again = try kc.run(["delete-generic-password", "-a", "alice", "-s", "example.com"])
            #expect(again.status == 44)
            #expect(again.stdout == "")
            #expect(again.stderr == notFoundLine)
        }
    }

    @Test("delete deletes one item only, even when several match", arguments: ToolMode.allCases)
    func deleteDeletesOne(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "one"])
            try kc.succeed(["add-generic-password", "-a", "bob", "-s", "example.com", "-w", "two"])
            let deleted = try kc.run(["delete-generic-password", "-s", "example.com"])
            #expect(deleted.status == 0)
            let dump = try kc.run(["dump-keychain"])
            #expect(dump.stdout.components(separatedBy: "class: \"genp\"").count == 2)
        }
    }

    @Test("delete with no attribute to match is a usage error", arguments: ToolMode.allCases)
    func deleteNeedsAFilter(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            let result = try kc.run(["delete-generic-password"])
            #expect(result.status == 2)
            #expect(result.stdout == "")
            #expect(result.stderr.contains("Usage: security delete-generic-password"))
            #expect(try kc.run(["find-generic-password", "-s", "example.com", "-w"]).stdout == "s3cret\n")
        }
    }

    @Test("four-character creator and type codes are stored as numbers and printed as text", arguments: ToolMode.allCases)
    func creatorAndType(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "notes", "-l", "My note", "-c", "abcd", "-C", "note", "-w", "x"])
            let found = try kc.run(["find-generic-password", "-C", "note"])
            #expect(found.status == 0)
            expectDescription(
                found.stdout,
                genericDescription(
                    kc, account: "alice", service: "notes", label: "My note",
                    creator: "abcd", type: "note"))
            #expect(try kc.run(["find-generic-password", "-C", "nope"]).status == 44)
            let bad = try kc.run(["find-generic-password", "-C", "abc"])
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("Usage:"))
        }
    }

    @Test("a non-printable password given with -X prints as hex with -g and -w", arguments: ToolMode.allCases)
    func hexPassword(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "binary", "-X", "00ff41"])
            let shown = try kc.run(["find-generic-password", "-s", "binary", "-g"])
            #expect(shown.status == 0)
            #expect(shown.stderr == "password: 0x00FF41  \"\\000\\377A\"\n")
            let only = try kc.run(["find-generic-password", "-s", "binary", "-w"])
            #expect(only.stdout == "00ff41\n")
            #expect(only.stderr == "")
            let bad = try kc.run(["add-generic-password", "-a", "alice", "-s", "bad", "-X", "zz"])
            #expect(bad.status == 2)
        }
    }

    @Test("-p is the legacy synonym of -w, and a password may start with a dash", arguments: ToolMode.allCases)
    func legacyPasswordFlag(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "legacy", "-p", "-dash-"])
            #expect(try kc.run(["find-generic-password", "-s", "legacy", "-w"]).stdout == "-dash-\n")
        }
    }

    @Test("a password in $(security find-generic-password … -w) works from a shell script", arguments: ToolMode.allCases)
    func shellSubstitution(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "github", "-w", "s3cret"])
            let folder = URL(fileURLWithPath: kc.tool).deletingLastPathComponent().path
            let path = folder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let script = #"token="$(security find-generic-password -a "$USER" -s github -w)"; printf '[%s]' "$token""#
            let result = try kc.launch("/bin/sh", ["-c", script], environment: ["USER": "alice", "PATH": path])
            #expect(result.status == 0)
            #expect(result.stdout == "[s3cret]")
            #expect(result.stderr == "")
        }
    }
}

/// The internet-password verbs.
@Suite("security: internet passwords")
struct InternetPasswordTests {
    func description(_ kc: Sandbox) -> [String] {
        [
            "keychain: \"\(kc.home)/keychain-2.db\"",
            "version: 512",
            "class: \"inet\"",
            "attributes:",
            "    0x00000007 <blob>=\"example.com\"",
            "    0x00000008 <blob>=<NULL>",
            "    \"acct\"<blob>=\"bob\"",
            "    \"atyp\"<blob>=\"dflt\"",
            "<date cdat>",
            "    \"crtr\"<uint32>=<NULL>",
            "    \"cusi\"<sint32>=<NULL>",
            "    \"desc\"<blob>=<NULL>",
            "    \"icmt\"<blob>=<NULL>",
            "    \"invi\"<sint32>=<NULL>",
            "<date mdat>",
            "    \"nega\"<sint32>=<NULL>",
            "    \"path\"<blob>=\"/path\"",
            "    \"port\"<uint32>=0x000001BB ",
            "    \"prot\"<blob>=<NULL>",
            "    \"ptcl\"<uint32>=\"htps\"",
            "    \"scrp\"<sint32>=<NULL>",
            "    \"sdmn\"<blob>=<NULL>",
            "    \"srvr\"<blob>=\"example.com\"",
            "    \"type\"<uint32>=<NULL>",
        ]
    }

    @Test("add, find and delete an internet password with protocol, port and path", arguments: ToolMode.allCases)
    func addFindDelete(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed([
                "add-internet-password", "-a", "bob", "-s", "example.com", "-r", "htps", "-P", "443",
                "-p", "/path", "-w", "pa55",
            ])
            let found = try kc.run(["find-internet-password", "-s", "example.com", "-r", "htps", "-P", "443", "-p", "/path", "-g"])
            #expect(found.status == 0)
            #expect(found.stderr == "password: \"pa55\"\n")
            expectDescription(found.stdout, description(kc))
            #expect(try kc.run(["find-internet-password", "-a", "bob", "-s", "example.com", "-w"]).stdout == "pa55\n")

            // Generic and internet passwords are separate classes.
            #expect(try kc.run(["find-generic-password", "-a", "bob"]).status == 44)
            #expect(try kc.run(["find-internet-password", "-s", "example.com", "-r", "http"]).status == 44)
            #expect(try kc.run(["find-internet-password", "-s", "example.com", "-P", "80"]).status == 44)

            let duplicate = try kc.run([
                "add-internet-password", "-a", "bob", "-s", "example.com", "-r", "htps", "-P", "443",
                "-p", "/path", "-w", "again",
            ])
            #expect(duplicate.status == 45)
            #expect(duplicate.stderr == "security: SecKeychainAddInternetPassword <NULL>: The specified item already exists in the keychain.\n")

            let deleted = try kc.run(["delete-internet-password", "-s", "example.com", "-r", "htps", "-P", "443", "-p", "/path"])
            #expect(deleted.status == 0)
            #expect(deleted.stderr == "password has been deleted.\n")
            expectDescription(deleted.stdout, description(kc))
            let missing = try kc.run(["find-internet-password", "-s", "example.com"])
            #expect(missing.status == 44)
            #expect(missing.stdout == "")
            #expect(missing.stderr == notFoundLine)
        }
    }

    @Test("-U updates an internet password", arguments: ToolMode.allCases)
    func update(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-internet-password", "-a", "bob", "-s", "example.com", "-r", "htps", "-w", "old"])
            try kc.succeed(["add-internet-password", "-U", "-a", "bob", "-s", "example.com", "-r", "htps", "-w", "new"])
            #expect(try kc.run(["find-internet-password", "-s", "example.com", "-w"]).stdout == "new\n")
        }
    }
}

/// dump-keychain, access groups, help, usage errors and the password prompt.
@Suite("security: dump-keychain, access groups, help and errors")
struct ToolBehaviourTests {
    @Test("dump-keychain lists every item and shows secrets only with -d", arguments: ToolMode.allCases)
    func dump(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            #expect(try kc.run(["dump-keychain"]).stdout == "")
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "example.com", "-w", "s3cret"])
            try kc.succeed(["add-internet-password", "-a", "bob", "-s", "example.org", "-r", "htps", "-w", "pa55"])
            let dump = try kc.run(["dump-keychain"])
            #expect(dump.status == 0)
            #expect(dump.stderr == "")
            #expect(dump.stdout.contains("class: \"genp\"\n"))
            #expect(dump.stdout.contains("class: \"inet\"\n"))
            #expect(dump.stdout.contains("    \"svce\"<blob>=\"example.com\"\n"))
            #expect(dump.stdout.contains("    \"srvr\"<blob>=\"example.org\"\n"))
            #expect(!dump.stdout.contains("s3cret"))
            #expect(!dump.stdout.contains("pa55"))
            #expect(!dump.stdout.contains("data:"))

            let withData = try kc.run(["dump-keychain", "-d"])
            #expect(withData.status == 0)
            #expect(withData.stdout.contains("    \"type\"<uint32>=<NULL>\ndata:\n\"s3cret\"\n"))
            #expect(withData.stdout.contains("    \"type\"<uint32>=<NULL>\ndata:\n\"pa55\"\n"))
            #expect(try kc.run(["dump-keychain", "-a"]).stdout == dump.stdout)
        }
    }

    @Test("--access-group puts new items in a group and narrows find, delete and dump to it", arguments: ToolMode.allCases)
    func accessGroups(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "one", "--access-group", "team.a"])
            try kc.succeed(["add-generic-password", "-a", "alice", "-s", "svc", "-w", "two", "--access-group", "team.b"])
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w", "--access-group", "team.b"]).stdout == "two\n")
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w", "--access-group", "team.a"]).stdout == "one\n")
            let other = try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "--access-group", "team.c"])
            #expect(other.status == 44)
            #expect(other.stderr == notFoundLine)
            // Without the option every group is searched; the first item wins.
            #expect(try kc.run(["find-generic-password", "-a", "alice", "-s", "svc", "-w"]).stdout == "one\n")
            let dumpB = try kc.run(["dump-keychain", "-d", "--access-group", "team.b"])
            #expect(dumpB.stdout.contains("\"two\""))
            #expect(!dumpB.stdout.contains("\"one\""))

            let deleted = try kc.run(["delete-generic-password", "-a", "alice", "-s", "svc", "--access-group", "team.b"])
            #expect(deleted.status == 0)
            #expect(try kc.run(["find-generic-password", "-s", "svc", "--access-group", "team.b"]).status == 44)
            #expect(try kc.run(["find-generic-password", "-s", "svc", "-w"]).stdout == "one\n")

            // The default group is the executable's full path (keychaind's private group for it); it is an ordinary
            // group to narrow to.
            try kc.succeed(["add-generic-password", "-a", "carol", "-s", "svc", "-w", "three"])
            let tool = URL(fileURLWithPath: kc.tool).resolvingSymlinksInPath().path
            #expect(try kc.run(["find-generic-password", "-a", "carol", "-w", "--access-group", tool]).stdout == "three\n")
        }
    }

    @Test(
        "-h prints each verb's help with its flags and exits 0",
        arguments: [
            ("add-generic-password", ["-a <account>", "-s <service>", "-w", "-X <hex>", "-U", "-T <appPath>", "--access-control <constraint>", "--or"]),
            ("find-generic-password", ["-a <account>", "-s <service>", "-g", "-w"]),
            ("delete-generic-password", ["-a <account>", "-s <service>"]),
            ("add-internet-password", ["-a <account>", "-s <server>", "-r <protocol>", "-P <port>", "-p <path>", "-t <authenticationType>"]),
            ("find-internet-password", ["-s <server>", "-r <protocol>", "-P <port>", "-g", "-w"]),
            ("delete-internet-password", ["-s <server>", "-p <path>"]),
            ("dump-keychain", ["-d", "-a"]),
            ("unlock-keychain", ["-p <password>", "-u"]),
            ("lock-keychain", ["-a"]),
            ("set-keychain-password", ["-o <oldPassword>", "-p <newPassword>"]),
            ("show-keychain-info", ["[<keychain> ...]"]),
            ("set-keychain-settings", ["-l", "-u", "-t <timeout>"]),
            ("backup-keychain", ["-o <file>", "-P <password>"]),
            ("restore-keychain", ["-i <file>", "-P <password>"]),
            ("export", ["-k <keychain>", "-t <type>", "-f <format>", "-P <passphrase>", "-o <outfile>", "pemseq", "backup"]),
            ("import", ["<inputfile>", "-f <format>", "-P <passphrase>", "-x", "-T <appPath>", "pkcs12"]),
            ("error", ["<error code>"]),
            ("add-certificates", ["-k <keychain>", "<file> ..."]),
            ("find-certificate", ["-c <name>", "-e <emailAddress>", "-a", "-m", "-p", "-Z"]),
            ("delete-certificate", ["-c <name>", "-Z <hash>", "-t"]),
            ("find-identity", ["-p <policy>", "-s <string>", "-v"]),
            ("verify-cert", ["-c <certFile>", "-r <rootCertFile>", "-p <policy>", "-s <sslHost>", "-q"]),
            ("app", ["add", "list", "remove"]),
            ("daemon", ["status"]),
            ("sync", ["create-account", "join", "approve", "devices", "remove-device", "status", "now"]),
            ("authorize", ["--reset"]),
        ])
    func help(verb: String, flags: [String]) throws {
        try withKeychain { kc in
            for option in ["-h", "--help"] {
                let result = try kc.run([verb, option])
                #expect(result.status == 0)
                #expect(result.stderr == "")
                #expect(result.stdout.contains("USAGE: security \(verb)"))
                for flag in flags {
                    #expect(result.stdout.contains(flag), "help of \(verb) lacks \(flag)")
                }
            }
            // `security help VERB` prints the same.
            let viaHelp = try kc.run(["help", verb])
            #expect(viaHelp.status == 0)
            #expect(viaHelp.stdout.contains("USAGE: security \(verb)"))
            #expect(!FileManager.default.fileExists(atPath: kc.home), "help must not create a keychain")
        }
    }

    @Test("an unknown flag is a usage error: exit 2 and the usage on stderr", arguments: ToolMode.allCases)
    func badFlag(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let result = try kc.run(["find-generic-password", "--bogus"])
            #expect(result.status == 2)
            #expect(result.stdout == "")
            #expect(result.stderr.contains("Usage: security find-generic-password"))
            let badPort = try kc.run(["find-internet-password", "-P", "99999"])
            #expect(badPort.status == 2)
            let missingValue = try kc.run(["find-generic-password", "-s"])
            #expect(missingValue.status == 2)
        }
    }

    @Test(
        "add without -w asks for the password twice on the terminal",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func promptOnTerminal() throws {
        try withKeychain { kc in
            // script(1) runs the tool on a new pseudo-terminal fed from our input.
            func onTerminal(_ arguments: [String], typing: String) throws -> ToolResult {
                let command = ([kc.tool] + arguments).map { "'\($0)'" }.joined(separator: " ")
                return try kc.launch("/usr/bin/script", ["-qec", command, "/dev/null"], input: Data(typing.utf8))
            }
            let added = try onTerminal(["add-generic-password", "-a", "alice", "-s", "typed"], typing: "t0ps3cret\nt0ps3cret\n")
            #expect(added.status == 0)
            #expect(added.stdout.contains("password data for new item: "))
            #expect(added.stdout.contains("retype password for new item: "))
            #expect(try kc.run(["find-generic-password", "-s", "typed", "-w"]).stdout == "t0ps3cret\n")

            let retried = try onTerminal(["add-generic-password", "-a", "alice", "-s", "retried", "-w"], typing: "one\ntwo\nok\nok\n")
            #expect(retried.status == 0)
            #expect(retried.stdout.contains("passwords don't match"))
            #expect(try kc.run(["find-generic-password", "-s", "retried", "-w"]).stdout == "ok\n")
        }
    }

    @Test(
        "add without a password and without a terminal fails with errSecInteractionNotAllowed, at once",
        arguments: [
            ["add-generic-password", "-a", "alice", "-s", "example.com"],
            ["add-generic-password", "-a", "alice", "-s", "example.com", "-w"],
            ["add-internet-password", "-a", "alice", "-s", "example.com", "-w"],
        ])
    func noTerminal(arguments: [String]) throws {
        try withKeychain { kc in
            let start = Date()
            let result = try kc.run(arguments, detached: true, timeout: 20)
            #expect(Date().timeIntervalSince(start) < 10)
            #expect(result.status == KeychainStatus.interactionNotAllowed.exitCode)
            #expect(result.status == 36)
            #expect(result.stdout == "")
            let function =
                arguments[0] == "add-generic-password"
                ? "SecKeychainItemCreateFromContent (<default>)" : "SecKeychainAddInternetPassword <NULL>"
            #expect(result.stderr.hasPrefix("security: \(function): User interaction is not allowed.\n"))
            #expect(try kc.run(["dump-keychain"]).stdout == "")
        }
    }
}
