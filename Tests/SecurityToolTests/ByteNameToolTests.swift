import Foundation
import KeychainTestSupport
import Testing

/// Names given as bytes that are not UTF-8 (issue 30, item 8): `security` reads argv as bytes, stores such a name
/// as exactly those bytes (a Data attribute, as Apple keeps `CFData` apart from `CFString`), and matches it
/// exactly, so `-a $'\xff'` and `-a $'\xfe'` are two items; where a verb or flag cannot carry bytes it refuses
/// with errSecParam instead of turning them into U+FFFD.
@Suite("security: names that are bytes")
struct ByteNameToolTests {
    /// Runs `security` with arguments given as raw bytes. Foundation's `Process` takes `String` arguments, which
    /// cannot hold bytes that are not UTF-8, so a shell builds each argument with printf's octal escapes and
    /// execs the tool (which then is the process keychaind sees).
    func run(_ kc: Sandbox, _ arguments: [[UInt8]]) throws -> ToolResult {
        var script = "exec \"$0\""
        for argument in arguments {
            // A NUL or a trailing newline cannot pass through $(printf): a test that asks for one is wrong, and fails.
            guard !argument.contains(0), argument.last != UInt8(ascii: "\n") else {
                throw TestProcessError("argument \(argument) cannot be passed through $(printf)")
            }
            let octal = argument.map { "\\" + String($0, radix: 8).leftPadded(to: 3) }.joined()
            script += " \"$(printf '\(octal)')\""
        }
        return try kc.launch("/bin/sh", ["-c", script, kc.tool])
    }

    /// Text as the bytes of its UTF-8.
    func t(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(
        "two accounts that differ in one byte that is not UTF-8 are two items, each read back exactly",
        arguments: ToolMode.allCases)
    func accountsDifferingInOneByteAreTwoItems(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let ff: [UInt8] = [0xFF], fe: [UInt8] = [0xFE]
            let addOne = try run(kc, [t("add-generic-password"), t("-a"), ff, t("-s"), t("s"), t("-w"), t("one")])
            #expect(addOne.status == 0, "\(addOne.stderr)")
            #expect(addOne.stdout == "" && addOne.stderr == "")
            let addTwo = try run(kc, [t("add-generic-password"), t("-a"), fe, t("-s"), t("s"), t("-w"), t("two")])
            #expect(addTwo.status == 0, "\(addTwo.stderr)")
            #expect(addTwo.stdout == "" && addTwo.stderr == "")

            let one = try run(kc, [t("find-generic-password"), t("-a"), ff, t("-s"), t("s"), t("-w")])
            #expect(one.status == 0)
            #expect(one.stdoutData == Data("one\n".utf8))
            let two = try run(kc, [t("find-generic-password"), t("-a"), fe, t("-s"), t("s"), t("-w")])
            #expect(two.status == 0)
            #expect(two.stdoutData == Data("two\n".utf8))

            // Neither is the account U+FFFD that argv's repair would have made of both.
            let repaired = try kc.run(["find-generic-password", "-a", "\u{FFFD}", "-s", "s", "-w"])
            #expect(repaired.status == 44)
            #expect(repaired.stdout == "")
            #expect(repaired.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")

            // Adding the same bytes again is a duplicate, not an overwrite of the other item.
            let again = try run(kc, [t("add-generic-password"), t("-a"), ff, t("-s"), t("s"), t("-w"), t("three")])
            #expect(again.status == 45)
            #expect(again.stderr == "security: SecKeychainItemCreateFromContent (<default>): The specified item already exists in the keychain.\n")

            // -U updates exactly the item of those bytes.
            let update = try run(kc, [t("add-generic-password"), t("-U"), t("-a"), fe, t("-s"), t("s"), t("-w"), t("deux")])
            #expect(update.status == 0, "\(update.stderr)")
            #expect(try run(kc, [t("find-generic-password"), t("-a"), fe, t("-s"), t("s"), t("-w")]).stdoutData == Data("deux\n".utf8))
            #expect(try run(kc, [t("find-generic-password"), t("-a"), ff, t("-s"), t("s"), t("-w")]).stdoutData == Data("one\n".utf8))

            // The attribute is shown as macOS shows a blob that is not printable text.
            let shown = try run(kc, [t("find-generic-password"), t("-a"), ff, t("-s"), t("s")])
            #expect(shown.status == 0)
            #expect(shown.stdout.contains("\n    \"acct\"<blob>=0xFF \n"))
            #expect(shown.stdout.contains("\n    0x00000007 <blob>=\"s\"\n"))
            let dump = try kc.run(["dump-keychain"])
            #expect(dump.status == 0)
            #expect(dump.stdout.contains("\n    \"acct\"<blob>=0xFF \n"))
            #expect(dump.stdout.contains("\n    \"acct\"<blob>=0xFE \n"))

            // Deleting one leaves the other.
            let deleted = try run(kc, [t("delete-generic-password"), t("-a"), fe, t("-s"), t("s")])
            #expect(deleted.status == 0)
            #expect(deleted.stdout.contains("\n    \"acct\"<blob>=0xFE \n"))
            #expect(deleted.stderr == "password has been deleted.\n")
            #expect(try run(kc, [t("find-generic-password"), t("-a"), fe, t("-s"), t("s"), t("-w")]).status == 44)
            #expect(try run(kc, [t("find-generic-password"), t("-a"), ff, t("-s"), t("s"), t("-w")]).stdoutData == Data("one\n".utf8))
        }
    }

    @Test(
        "services, labels, servers and paths that are bytes are kept exactly; UTF-8 names stay text",
        arguments: ToolMode.allCases)
    func otherNamesAreBytesToo(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            // A service that mixes text and a stray byte; its label defaults to the same bytes.
            let service: [UInt8] = t("svc") + [0xE9] + t("x")
            #expect(try run(kc, [t("add-generic-password"), t("-a"), t("me"), t("-s"), service, t("-w"), t("a")]).status == 0)
            #expect(try run(kc, [t("add-generic-password"), t("-a"), t("me"), t("-s"), t("svc\u{E9}x"), t("-w"), t("b")]).status == 0)
            let bytes = try run(kc, [t("find-generic-password"), t("-a"), t("me"), t("-s"), service])
            #expect(bytes.status == 0)
            #expect(bytes.stdout.contains("\n    \"svce\"<blob>=0x737663E978  \"svc\\351x\"\n"))
            #expect(bytes.stdout.contains("\n    0x00000007 <blob>=0x737663E978  \"svc\\351x\"\n"))
            #expect(bytes.stdout.contains("\n    \"acct\"<blob>=\"me\"\n"))
            #expect(try run(kc, [t("find-generic-password"), t("-a"), t("me"), t("-s"), service, t("-w")]).stdoutData == Data("a\n".utf8))
            #expect(try kc.run(["find-generic-password", "-a", "me", "-s", "svc\u{E9}x", "-w"]).stdout == "b\n")
            #expect(try run(kc, [t("find-generic-password"), t("-l"), service, t("-w")]).stdoutData == Data("a\n".utf8))

            // Internet passwords: server and path.
            let server: [UInt8] = t("h") + [0xC0]
            let path: [UInt8] = t("/") + [0x80]
            #expect(try run(kc, [t("add-internet-password"), t("-a"), t("me"), t("-s"), server, t("-p"), path, t("-w"), t("c")]).status == 0)
            #expect(try run(kc, [t("add-internet-password"), t("-a"), t("me"), t("-s"), server, t("-p"), t("/") + [0x81], t("-w"), t("d")]).status == 0)
            #expect(try run(kc, [t("find-internet-password"), t("-s"), server, t("-p"), path, t("-w")]).stdoutData == Data("c\n".utf8))
            #expect(try run(kc, [t("find-internet-password"), t("-s"), server, t("-p"), t("/") + [0x81], t("-w")]).stdoutData == Data("d\n".utf8))
            let shown = try run(kc, [t("find-internet-password"), t("-s"), server, t("-p"), path])
            #expect(shown.stdout.contains("\n    \"srvr\"<blob>=0x68C0  \"h\\300\"\n"))
            #expect(shown.stdout.contains("\n    \"path\"<blob>=0x2F80  \"/\\200\"\n"))
            #expect(try kc.run(["find-internet-password", "-s", "h\u{FFFD}", "-w"]).status == 44)
        }
    }

    @Test("a password given as bytes that are not UTF-8 is stored as those bytes", arguments: ToolMode.allCases)
    func passwordBytes(_ mode: ToolMode) throws {
        try withKeychain(mode) { kc in
            let added = try run(kc, [t("add-generic-password"), t("-a"), t("a"), t("-s"), t("s"), t("-w"), [0xFF, 0x41]])
            #expect(added.status == 0, "\(added.stderr)")
            // -w prints a secret that is not text as lowercase hex, as macOS does.
            let found = try kc.run(["find-generic-password", "-a", "a", "-s", "s", "-w"])
            #expect(found.status == 0)
            #expect(found.stdout == "ff41\n")
        }
    }

    @Test("bytes where they cannot be kept exactly are refused with errSecParam, never changed")
    func refusedWhereNotCarried() throws {
        try withKeychain { kc in
            try kc.succeed(["add-generic-password", "-a", "other", "-s", "s", "-w", "x"])
            let group = try run(
                kc,
                [
                    t("add-generic-password"), t("-a"), t("a"), t("-s"), t("s"), t("-w"), t("x"),
                    t("--access-group"), [0xFF],
                ])
            #expect(group.status == 206)
            #expect(group.stdout == "")
            // (The layout of the lines around the explanation is ToolFailure's; the explanation is this one.)
            #expect(group.stderr.hasPrefix("security: "))
            #expect(group.stderr.contains("An argument that is not UTF-8 text was given to a flag that takes only text, or a flag was given twice."))
            #expect(group.stderr.contains("Give such bytes only to -a, -s, -l, -j, -D and -G (internet passwords also -d and -p) and the password -w, each once.\n"))
            #expect(group.stderr.contains("security: SecKeychainItemCreateFromContent (<default>): "))
            // A flag given twice keeps only its last value: the bytes of the first would be lost.
            let twice = try run(kc, [t("find-generic-password"), t("-a"), [0xFF], t("-a"), t("b")])
            #expect(twice.status == 206)
            #expect(twice.stdout == "")
            #expect(twice.stderr.contains("security: SecKeychainSearchCopyNext: "))
            #expect(twice.stderr.contains("or a flag was given twice."))

            let otherVerb = try run(kc, [t("find-certificate"), t("-c"), [0xFF]])
            #expect(otherVerb.status == 206)
            #expect(otherVerb.stdout == "")
            #expect(otherVerb.stderr.contains("Argument 3 (counting the command as 1) is not UTF-8 text, and find-certificate keeps only text."))
            #expect(
                otherVerb.stderr.contains(
                    "Give it UTF-8 text: only the password commands keep such bytes exactly (in -a, -s, -l, -j, -D and -G (internet passwords also -d and -p) and the password -w).\n"))
            #expect(otherVerb.stderr.contains("security: find-certificate: "))
            // Nothing was added by the refused command.
            #expect(try kc.run(["find-generic-password", "-a", "a", "-s", "s"]).status == 44)
        }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
