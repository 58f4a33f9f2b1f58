import Foundation
import Testing
import KeychainCore
import KeychainTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// An unregistered program's private group is bound to the executable's contents when someone other than root can
/// change the file at its path: another file put there later is not that program. (Statuses are the helper's
/// OSStatus: errSecInteractionNotAllowed -25308, errSecAuthFailed -25293.)
@Suite struct ProgramBindingTests {
    /// A program in a folder any user may write (made by root; a non-root test's own folder is changeable by the
    /// user's programs alike), and a way to put another file at its path.
    struct Replaceable {
        let fixture: DaemonFixture
        let path: String

        init() throws {
            fixture = try DaemonFixture()
            let bin = fixture.folder + "/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            #expect(chmod(bin, 0o777) == 0)
            path = try fixture.program("bin/app")
        }

        /// Puts another program (the test helper with another marker) at the path, as any program of the user could.
        func replace(marker: String) throws {
            var bytes = try Data(contentsOf: productsDirectory().appendingPathComponent("keychain-test-helper"))
            bytes.append(Data("\n\(marker)\n".utf8))
            try FileManager.default.removeItem(atPath: path)
            try writeExecutable(bytes, to: path)
        }
    }

    @Test func anotherFileAtAnUnregisteredProgramsPathGetsNotItsItems() throws {
        let app = try Replaceable()
        let daemon = try DaemonProcess(home: app.fixture.home, environment: ["KEYCHAIN_PINENTRY": "/nonexistent/pinentry"])
        let env = try app.fixture.environment(daemon)
        // The first program there has nothing to take: bound silently, and served.
        #expect(try runProgram(app.path, ["add", "x", "svc", "secret-a"], environment: env).stdout == "status=0\n")
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout == "status=0\ndata=secret-a\nagrp=\(app.path)\n")

        // Another file at the path: the same path, other contents. Nobody can be asked, so it gets nothing.
        try app.replace(marker: "impostor")
        let run = try runProgram(app.path, ["find", "x", "svc"], environment: env)
        #expect(run.stdout.hasPrefix("status=-25308\n"), "\(run.stdout)\(run.stderr)")
        #expect(!run.stdout.contains("secret-a") && !run.stderr.contains("secret-a"))
        #expect(
            try runProgram(app.path, ["add", "y", "svc", "planted"], environment: env).stdout.hasPrefix("status=-25308\n"),
            "nor may it add to the group")
        #expect(daemon.stop() == 0)
        #expect(try app.fixture.items(in: app.path) == ["x": "secret-a"])
        let bindings = try app.fixture.engine.consents().filter { $0.subject == "own-group" }
        #expect(bindings.count == 1 && bindings.first?.verdict == .always && bindings.first?.programIsNamed(app.path) == true)
    }

    @Test func thePersonApprovesANewVersionOnceOrAlwaysOrDeniesIt() throws {
        let app = try Replaceable()
        let pinentry = try DaemonPinentry()
        let daemon = try DaemonProcess(home: app.fixture.home, environment: ["KEYCHAIN_PINENTRY": pinentry.program])
        let env = try app.fixture.environment(daemon)
        #expect(try runProgram(app.path, ["add", "x", "svc", "secret-a"], environment: env).stdout == "status=0\n")
        #expect(pinentry.starts == 0, "the first program there is not asked about")

        // A rebuilt program: allowed once, then asked again; then always.
        try app.replace(marker: "version 2")
        try pinentry.queue("confirm notok")
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout == "status=0\ndata=secret-a\nagrp=\(app.path)\n")
        #expect(pinentry.log.contains("the file at that path has changed since"), "\(pinentry.log)")
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout.hasPrefix("status=-128\n"), "asked again; nobody answers")
        try pinentry.queue("confirm")
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout.hasPrefix("status=0\n"))
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout.hasPrefix("status=0\n"))
        #expect(pinentry.starts == 3, "an Always is remembered for these contents")

        // A third file there: denied, and the refusal remembered.
        try app.replace(marker: "impostor")
        try pinentry.queue("notok")
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout.hasPrefix("status=-25293\n"))
        #expect(try runProgram(app.path, ["find", "x", "svc"], environment: env).stdout.hasPrefix("status=-25293\n"))
        #expect(pinentry.starts == 4)
        // Each version's answer is listed, and can be revoked, as any other.
        let listed = try runProgram(try BuiltProducts.path(of: "security"), ["app", "consents"], environment: env)
        #expect(listed.stdout.components(separatedBy: "own-group").count == 4, "three versions: \(listed.stdout)\(listed.stderr)")
        #expect(daemon.stop() == 0)
    }
}
