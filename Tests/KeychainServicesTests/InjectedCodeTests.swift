import Foundation
import Testing
import KeychainCore
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A library the system installed that no test program links (libattr, which Debian always has).
let unlinkedSystemLibrary: String? = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
    .map { $0 + "/libattr.so.1" }
    .first { FileManager.default.fileExists(atPath: $0) }
    .map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }

/// Code put into a registered program without any loader variable: the program loads a plugin from where its
/// configuration says (GTK_MODULES, PYTHONPATH, a config file), which any program of the user can point elsewhere.
@Suite(.enabled(if: unlinkedSystemLibrary != nil, "needs libattr.so.1 (Debian's libattr1) to load as a plugin"))
struct InjectedCodeTests {
    @Test func aLibraryTheProgramDoesNotLinkFromAFolderOthersCanWriteMakesItUntrusted() throws {
        let library = try #require(unlinkedSystemLibrary)
        let f = try DaemonFixture()
        let (app, daemon, env) = try f.servedVictim()

        // The attacker's "plugin", in a folder any program of the user may write, and (as root) someone else's file.
        let plugins = f.folder + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        #expect(chmod(plugins, 0o777) == 0)
        let plugin = plugins + "/libinjected.so"
        try FileManager.default.copyItem(atPath: library, toPath: plugin)
        if getuid() == 0 { #expect(chown(plugin, 65534, 65534) == 0) }
        let run = try runProgram(app, ["with-plugin", plugin, "find", "x", "svc"], environment: env)
        #expect(run.stdout.hasPrefix("status=-25300\n"), "the registered group is out of its reach: \(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-v"))
        #expect(try runProgram(app, ["with-plugin", plugin, "find", "x", "svc", "TEAM.victim"], environment: env).stdout.hasPrefix("status=-34018\n"))
        #expect(daemon.logs("untrusted client") && daemon.output.contains(plugin), "\(daemon.output)")

        // The same library where only root can change it is the system's plugin: the program stays itself.
        #expect(try runProgram(app, ["with-plugin", library, "find", "x", "svc"], environment: env).stdout == "status=0\ndata=secret-v\nagrp=TEAM.victim\n")
        #expect(daemon.stop() == 0)
    }
}
