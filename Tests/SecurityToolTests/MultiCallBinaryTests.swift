import Foundation
import KeychainTestSupport
import Testing

/// The installed programs are one binary, `keychain`, under three names (hard links, as Support/package.sh installs
/// them). Which tool runs is decided by the executable's own name as the kernel reports it, and keychaind trusts
/// the `security` beside it as the admin tool by that same kernel-given path: so a link, a symbolic link or an
/// argv[0] of the caller's choosing never makes another tool, or another path, the admin tool.
@Suite("keychain: the multi-call binary")
struct MultiCallBinaryTests {
    /// A folder holding a copy of the built `keychain` with hard links named after each tool, and a keychain home.
    struct Installed {
        let root: String
        let bin: String

        init() throws {
            root = FileManager.default.temporaryDirectory.path + "/multi-call-" + UUID().uuidString
            bin = root + "/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: try BuiltProducts.path(of: "keychain"), toPath: bin + "/keychain")
            for tool in ["security", "keychaind", "git-credential-keychain"] {
                try FileManager.default.linkItem(atPath: bin + "/keychain", toPath: bin + "/" + tool)
            }
        }

        /// The environment of every run: a private keychain, served by the keychaind at `socket` when given.
        func environment(socket: String? = nil) -> [String: String] {
            [
                "KEYCHAIN_HOME": root + "/home", "HOME": root, "LANG": "C", "PATH": "/usr/bin:/bin",
                "KEYCHAIN_DAEMON_SOCKET": socket ?? "off",
            ]
        }

        func run(_ executable: String, _ arguments: [String], socket: String? = nil, input: String? = nil) throws -> ProgramRun {
            try ProgramRun.run(executable, arguments, environment: environment(socket: socket), input: input.map { Data($0.utf8) })
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test func eachNameRunsItsTool() throws {
        let installed = try Installed()
        defer { installed.remove() }
        for tool in ["security", "keychaind", "git-credential-keychain"] {
            let version = try installed.run(installed.bin + "/" + tool, ["--version"])
            #expect(version.status == 0)
            #expect(version.stdout.hasPrefix("\(tool) "), "\(tool) --version printed \(version.stdout)")
        }
        // `keychain TOOL …` runs the tool; `keychain` alone says what it is.
        let named = try installed.run(installed.bin + "/keychain", ["security", "--version"])
        #expect(named.status == 0)
        #expect(named.stdout.hasPrefix("security "))
        let bare = try installed.run(installed.bin + "/keychain", [])
        #expect(bare.status == 2)
        #expect(bare.stderr.contains("tools: security, keychaind, git-credential-keychain"))
    }

    @Test func aSecretRoundTripsThroughTheLinks() throws {
        let installed = try Installed()
        defer { installed.remove() }
        let add = try installed.run(installed.bin + "/security", ["add-generic-password", "-a", "alice", "-s", "multi", "--password-stdin"], input: "s3cret\n")
        #expect(add.status == 0, "\(add.stderr)")
        let find = try installed.run(installed.bin + "/keychain", ["security", "find-generic-password", "-a", "alice", "-s", "multi", "-w"])
        #expect(find.status == 0, "\(find.stderr)")
        #expect(find.stdout == "s3cret\n")
    }

    @Test func argv0DoesNotChooseTheToolOfAHardLink() throws {
        let installed = try Installed()
        defer { installed.remove() }
        // The git helper's link run with argv[0] "security": it stays the git helper, which ignores an operation it
        // does not know (exit 0, nothing printed), instead of becoming the security tool under the helper's identity.
        let disguised = try ProgramRun.run(
            "/bin/bash", ["-c", "exec -a security \"$0\" list-keychains", installed.bin + "/git-credential-keychain"],
            environment: installed.environment())
        #expect(disguised.status == 0)
        #expect(disguised.stdout == "")
        #expect(disguised.stderr == "")
    }

    @Test func keychaindTrustsOnlyTheSecurityLinkBesideIt() throws {
        let installed = try Installed()
        defer { installed.remove() }
        let socket = installed.root + "/d.sock"
        let daemon = try KeychaindProcess(socketPath: socket, environment: installed.environment(), executable: installed.bin + "/keychaind")
        defer { _ = daemon.stop() }

        let direct = try installed.run(installed.bin + "/security", ["daemon", "status"], socket: socket)
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(direct.stdout.contains("admin tool: yes"), "\(direct.stdout)")

        // The same binary under another path (run as `keychain security`, and through a symbolic link named
        // security elsewhere) is the same code but not the admin tool: keychaind decides by the kernel's path.
        let named = try installed.run(installed.bin + "/keychain", ["security", "daemon", "status"], socket: socket)
        #expect(named.status == 0, "\(named.stderr)")
        #expect(named.stdout.contains("admin tool: no"), "\(named.stdout)")
        let elsewhere = installed.root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: elsewhere + "/security", withDestinationPath: installed.bin + "/keychain")
        let symlinked = try installed.run(elsewhere + "/security", ["daemon", "status"], socket: socket)
        #expect(symlinked.status == 0, "\(symlinked.stderr)")
        #expect(symlinked.stdout.contains("admin tool: no"), "\(symlinked.stdout)")
    }
}
