import Foundation
import KeychainTestSupport
import KeychainVersion
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the programs say to a person: unknown commands, `help`, `--help` and `--version` of every program, and
/// failures that lead with their cause (which file, which permission) instead of Apple's generic text.
@Suite("programs: unknown commands, --help, --version, the cause first")
struct ProgramMessagesTests {
    // MARK: Unknown commands

    @Test("an unknown command says so, with exit status 2, instead of complaining about its first flag")
    func unknownCommand() throws {
        try withKeychain(.inProcess) { kc in
            let result = try kc.run(["frobnicate", "-s", "x"])
            #expect(result.status == 2)
            #expect(result.stdout == "")
            #expect(result.stderr == "security: unknown command 'frobnicate'\nsecurity: run `security help` for the list of commands.\n")
            #expect(!FileManager.default.fileExists(atPath: kc.home), "nothing was opened")
        }
    }

    @Test("a misspelt command names the closest one")
    func misspeltCommand() throws {
        try withKeychain(.inProcess) { kc in
            let typo = try kc.run(["find-generic-pasword", "-a", "a", "-s", "s"])
            #expect(typo.status == 2)
            #expect(typo.stdout == "")
            #expect(typo.stderr == "security: unknown command 'find-generic-pasword'; did you mean 'find-generic-password'?\n")

            // In a group of verbs, the suggestion is the group's verb.
            let nested = try kc.run(["app", "lst"])
            #expect(nested.status == 2)
            #expect(nested.stderr == "security: unknown command 'app lst'; did you mean 'app list'?\n")

            // The beginning of several verbs names them all.
            let beginning = try kc.run(["delete", "-s", "x"])
            #expect(beginning.status == 2)
            #expect(beginning.stderr == "security: unknown command 'delete'; did you mean 'delete-generic-password', 'delete-internet-password', 'delete-keychain' or 'delete-certificate'?\n")
        }
    }

    @Test("help of an unknown command fails; help of a verb prints it")
    func helpOfAnUnknownCommand() throws {
        try withKeychain(.inProcess) { kc in
            let unknown = try kc.run(["help", "frobnicate"])
            #expect(unknown.status == 2)
            #expect(unknown.stdout == "")
            #expect(unknown.stderr == "security: unknown command 'frobnicate'\nsecurity: run `security help` for the list of commands.\n")

            let typo = try kc.run(["help", "find-generic-pasword"])
            #expect(typo.status == 2)
            #expect(typo.stderr == "security: unknown command 'find-generic-pasword'; did you mean 'find-generic-password'?\n")

            let known = try kc.run(["help", "find-generic-password"])
            #expect(known.status == 0, "\(known.stderr)")
            #expect(known.stderr == "")
            #expect(known.stdout.contains("USAGE: security find-generic-password"), "\(known.stdout)")

            let nested = try kc.run(["help", "app", "list"])
            #expect(nested.status == 0, "\(nested.stderr)")
            #expect(nested.stdout.contains("USAGE: security app list"), "\(nested.stdout)")

            let general = try kc.run(["help"])
            #expect(general.status == 0)
            #expect(general.stdout.contains("USAGE: security <subcommand>"), "\(general.stdout)")
        }
    }

    // MARK: --help and --version of every program

    static let programs = ["security", "keychaind", "git-credential-keychain", "keychain-sync-server"]

    @Test("every program prints its version, from one place", arguments: programs)
    func version(program: String) throws {
        try withKeychain(.inProcess) { kc in
            let result = try kc.launch(try BuiltProducts.path(of: program), ["--version"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "\(program) \(KeychainVersion.string) (swift-keychain)\n")
            #expect(result.stderr == "")
        }
    }

    @Test("every program answers --help with its usage", arguments: programs)
    func help(program: String) throws {
        try withKeychain(.inProcess) { kc in
            let result = try kc.launch(try BuiltProducts.path(of: program), ["--help"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr == "")
            if program == "git-credential-keychain" {
                #expect(result.stdout.hasPrefix("usage: git-credential-keychain get|store|erase\n\n"), "\(result.stdout)")
            } else {
                #expect(result.stdout.hasPrefix("OVERVIEW: "), "\(result.stdout)")
                #expect(result.stdout.contains("USAGE: \(program)"), "\(result.stdout)")
                #expect(result.stdout.contains("--version"), "\(result.stdout)")
            }
        }
    }

    @Test("git-credential-keychain --help says how to configure git; unknown operations stay silent")
    func gitHelperUsage() throws {
        try withKeychain(.inProcess) { kc in
            let helper = try BuiltProducts.path(of: "git-credential-keychain")
            let help = try kc.launch(helper, ["--help"])
            #expect(help.stdout.contains("\n    git config --global credential.helper keychain\n"), "\(help.stdout)")
            for operation in ["get ", "store ", "erase "] {
                #expect(help.stdout.contains("\n  \(operation)"), "\(operation)")
            }
            let short = try kc.launch(helper, ["-h"])
            #expect(short.status == 0)
            #expect(short.stdout == help.stdout)

            // gitcredentials(7): a helper ignores operations it does not know, so that git can add new ones.
            let unknown = try kc.launch(helper, ["frobnicate"], input: Data("protocol=https\nhost=example.com\n\n".utf8))
            #expect(unknown.status == 0)
            #expect(unknown.stdout == "" && unknown.stderr == "")
        }
    }

    // MARK: The cause first

    @Test("a keychain folder under a regular file: the file is named first, then what to do, then the status")
    func keychainHomeUnderAFile() throws {
        try withKeychain(.inProcess) { kc in
            let file = kc.root + "/plain"
            try Data("not a folder\n".utf8).write(to: URL(fileURLWithPath: file))
            let home = file + "/keychain"
            let result = try kc.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"], environment: ["KEYCHAIN_HOME": home])
            #expect(result.status == 220)
            #expect(result.stdout == "")
            #expect(
                result.stderr == """
                    security: Cannot use the folder \(home): \(file) is a file, not a folder.
                    security: Move that file away, or set KEYCHAIN_HOME to a folder of your own.
                    security: SecKeychainOpen: OSStatus -36 (see `security error -36`)

                    """)

            // Apple's text for the status stays available.
            let explained = try kc.run(["error", "-36"])
            #expect(explained.stdout == "Error: 0xFFFFFFDC -36 I/O error.\n")
        }
    }

    static let setpriv = "/usr/bin/setpriv"

    @Test(
        "a keychain folder another user owns: the permission is named first",
        .enabled(
            if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv),
            "needs root and setpriv to run the tool as another user"))
    func keychainFolderOfAnotherUser() throws {
        try withKeychain(.inProcess) { kc in
            try kc.succeed(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"])
            let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", kc.tool]
            let result = try kc.launch(Self.setpriv, asNobody + ["find-generic-password", "-a", "a", "-s", "s"])
            #expect(result.status == 220)
            #expect(result.stdout == "")
            #expect(
                result.stderr == """
                    security: Cannot use the folder \(kc.home): you (user 65534) have no permission to open it, which belongs to user 0 (mode 700).
                    security: Run as the user whose keychain it is, or set KEYCHAIN_HOME to a folder of your own.
                    security: SecKeychainOpen: OSStatus -36 (see `security error -36`)

                    """)

            // A folder on the way that the user may not enter is named, not the keychain folder.
            let inner = kc.root + "/closed/keychain"
            try FileManager.default.createDirectory(
                atPath: inner, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            chmod(kc.root + "/closed", 0o700)
            let closed = try kc.launch(
                Self.setpriv, asNobody + ["add-generic-password", "-a", "a", "-s", "s", "-w", "x"],
                environment: ["KEYCHAIN_HOME": inner])
            #expect(closed.status == 220)
            #expect(
                closed.stderr.hasPrefix("security: Cannot use the folder \(inner): you (user 65534) have no permission to enter \(kc.root)/closed, which belongs to user 0 (mode 700).\n"),
                "\(closed.stderr)")
        }
    }

    @Test("well-known macOS lines are unchanged: a duplicate and a miss")
    func macOSLinesStay() throws {
        try withKeychain(.inProcess) { kc in
            try kc.succeed(["add-generic-password", "-a", "a", "-s", "s", "-w", "x"])
            let duplicate = try kc.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "y"])
            #expect(duplicate.status == 45)
            #expect(duplicate.stderr == "security: SecKeychainItemCreateFromContent (<default>): The specified item already exists in the keychain.\n")
            let missing = try kc.run(["find-generic-password", "-a", "b", "-s", "s"])
            #expect(missing.status == 44)
            #expect(missing.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
        }
    }
}
