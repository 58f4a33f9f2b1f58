import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A scripted pinentry (`Tests/ScriptedPinentry`) of one test's own: a wrapper program that runs it with this test's
/// script of answers and log, so tests running side by side never share either.
///
/// Each prompt takes the next queued line: `confirm` (Allow, then Always allow), `confirm notok` (Allow, then Only
/// this time), `notok` (Deny), `pin TEXT` (TEXT as the passcode), `nodisplay` (the prompt cannot be shown),
/// `cancel`; with nothing queued, the prompt is cancelled.
///
/// keychaind runs it when its environment names it (`KEYCHAIN_PINENTRY`, a file of keychaind's own user). A keychain
/// setting may name it only when root wrote it (a setting names only programs only root can change): see
/// ``settingsMayNameATestPinentry``.
public final class PinentryScript: @unchecked Sendable {
    /// The folder holding the wrapper, the script and the log.
    public let folder: String
    /// The wrapper program to name as the pinentry.
    public var program: String { folder + "/pinentry" }
    /// The queued answers, one line per prompt.
    public var scriptPath: String { folder + "/script" }
    /// Where every prompt is recorded.
    public var logPath: String { folder + "/log" }
    private let ownsFolder: Bool

    /// A wrapper in `folder` (by default a new temporary folder, removed with this object).
    public init(in folder: String? = nil) throws {
        ownsFolder = folder == nil
        self.folder = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("pinentry-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: self.folder, withIntermediateDirectories: true)
        try writeExecutable(
            Data(
                """
                #!/bin/sh
                SCRIPTED_PINENTRY_SCRIPT='\(scriptPath)' SCRIPTED_PINENTRY_LOG='\(logPath)' exec '\(try BuiltProducts.path(of: "scripted-pinentry"))'

                """.utf8), to: program)
    }

    deinit { if ownsFolder { try? FileManager.default.removeItem(atPath: folder) } }

    /// Queues answers after those still waiting, one line per prompt to come.
    public func queue(_ lines: String...) throws {
        let old = (try? String(contentsOfFile: scriptPath, encoding: .utf8)) ?? ""
        try (old + lines.map { $0 + "\n" }.joined()).write(toFile: scriptPath, atomically: true, encoding: .utf8)
    }

    /// Replaces the answers still waiting with `lines`.
    public func replaceQueue(_ lines: String...) throws {
        try lines.map { $0 + "\n" }.joined().write(toFile: scriptPath, atomically: true, encoding: .utf8)
    }

    /// Everything the pinentries received, every start included.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// How many pinentries were started.
    public var starts: Int { log.components(separatedBy: "\n").filter { $0.hasPrefix("--- start") }.count }
}

/// Whether a keychain setting (`keychain.settings`, `set-keychain-settings --pinentry`) may name a pinentry a test
/// wrote: a setting names only programs only root can change, which a test's file is only when the tests run as root.
/// Tests that need it are skipped otherwise, saying so.
public let settingsMayNameATestPinentry = getuid() == 0
