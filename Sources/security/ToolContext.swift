import Foundation
import KeychainCore
import Logging

/// The keychain the tool works on and the caller it acts as: the user's own admin tool, which may use
/// every access group and creates new items in one default group.
struct ToolContext {
    let engine: KeychainEngine
    let caller: AccessPolicy

    /// Opens the keychain named by the environment (`KEYCHAIN_HOME`, …). New items go to `accessGroup` when
    /// given, else to the first group of the caller's entitlements (the executable's name without
    /// `KEYCHAIN_ENTITLEMENTS`).
    static func open(accessGroup: String?) throws(ToolFailure) -> ToolContext {
        let group: String
        if let accessGroup {
            group = accessGroup
        } else {
            do {
                group = try AccessPolicy.fromEnvironment().groups.first ?? AccessPolicy.currentExecutableName()
            } catch {
                throw ToolFailure("SecKeychainOpen", error)
            }
        }
        return ToolContext(engine: try sharedEngine(), caller: .unrestricted(defaultGroup: group))
    }

    private static let engineLock = NSLock()
    nonisolated(unsafe) private static var engine: KeychainEngine?

    /// The keychain this process works on, opened once, so that an unlock lasts for the whole command.
    static func sharedEngine() throws(ToolFailure) -> KeychainEngine {
        engineLock.lock()
        defer { engineLock.unlock() }
        if let engine { return engine }
        do {
            // The tool's stderr is macOS's exact text: only errors are logged there.
            var logger = Logger(label: "security")
            logger.logLevel = .error
            let opened = try KeychainEngine(location: .fromEnvironment(), logger: logger)
            engine = opened
            return opened
        } catch {
            throw ToolFailure("SecKeychainOpen", error)
        }
    }

    /// The path printed on each item's `keychain:` line.
    var keychainPath: String { engine.location.databasePath }
}

/// A failed keychain call, reported as macOS does: `security: <Function>: <message>` on stderr, and the low
/// byte of the `OSStatus` as the exit status.
struct ToolFailure: Error {
    /// The Apple function macOS names in the message (`SecKeychainSearchCopyNext`, …).
    var function: String
    var status: KeychainStatus
    /// Our explanation of what to do next, printed on a second line for failures macOS has no fixed text for.
    var detail: String?
    /// Whether the keychain itself reported the failure (rather than a prompt or the command line).
    var fromKeychain = false
    /// The keychaind client the failing call went through, when it went through one: a retry after asking
    /// for the passcode unlocks through this client's connection (which keychaind then trusts), not in-process.
    var daemon: DaemonClient?
    /// The first line's text when it is not the status's message (a bad file name on the command line).
    var summary: String?
    /// The exit status when it is not the status's low byte.
    var exitStatus: Int32?

    init(_ function: String, status: KeychainStatus, detail: String? = nil) {
        self.function = function
        self.status = status
        self.detail = detail
    }

    /// A failure of the command's input rather than of a keychain call (a file that is missing or not
    /// executable): `security: <function>: <message>` and exit status 1, as macOS's tool exits for a bad file.
    static func input(_ function: String, _ message: String) -> ToolFailure {
        var failure = ToolFailure(function, status: .param)
        failure.summary = message
        failure.exitStatus = 1
        return failure
    }

    /// Wraps an engine error. Misses and duplicates print exactly macOS's line; other failures add the
    /// engine's explanation (which never contains a secret or an attribute value).
    init(_ function: String, _ error: KeychainError) {
        let plain: Set<KeychainError.Code> = [.itemNotFound, .duplicateItem]
        self.init(function, status: error.status, detail: plain.contains(error.code) ? nil : error.message)
        fromKeychain = true
    }

    /// The text written to stderr.
    var text: String {
        var out = "security: \(function): \(summary ?? status.message)\n"
        if let detail { out += "security: \(detail)\n" }
        return out
    }

    /// The process exit status: the status's low byte, never 0 for a failure.
    var exitCode: Int32 {
        if let exitStatus { return exitStatus }
        let code = status.exitCode
        return code == 0 ? 1 : code
    }
}

/// Writes to the standard streams without buffering surprises: each call is one `write`.
enum Output {
    static func standardOutput(_ text: String) { standardOutput(Data(text.utf8)) }
    static func standardOutput(_ data: Data) { FileHandle.standardOutput.write(data) }
    static func standardError(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}
