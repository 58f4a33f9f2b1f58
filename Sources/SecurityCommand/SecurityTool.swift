import ArgumentParser
import Foundation
import KeychainKit
import KeychainVersion
#if Network
// The sync client and OCSP over HTTP, registered with KeychainCore at start (the Network trait).
import KeychainSyncClient
#endif

/// The `security` command: macOS's keychain tool, with its verbs, flags, output and exit statuses, working on
/// the keychain in `KEYCHAIN_HOME` (else `$XDG_DATA_HOME/keychain`, else `~/.local/share/keychain`).
package struct SecurityTool: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "security",
        abstract: "Command line interface to the keychain.",
        discussion: """
            Works on the keychain in KEYCHAIN_HOME (else $XDG_DATA_HOME/keychain, else ~/.local/share/keychain) \
            with macOS's syntax and output. A failed keychain call prints "security: <function>: <message>" (or, \
            where Apple's message is a generic one, what happened, what to do, then the function and OSStatus, which \
            `security error N` explains) and exits with the low byte of its OSStatus (44 when no item matched, 45 for \
            a duplicate); bad flags and unknown commands exit 2. \
            `app` manages the programs keychaind gives access groups to, through keychaind when it runs; \
            `daemon status` shows whether it does. `sync` syncs synchronizable items between your machines through a \
            keychain-sync-server.
            """,
        version: KeychainVersion.line(program: "security"),
        subcommands: [
            AddGenericPassword.self, FindGenericPassword.self, DeleteGenericPassword.self,
            AddInternetPassword.self, FindInternetPassword.self, DeleteInternetPassword.self,
            DumpKeychain.self, VerifyKeychain.self, UnlockKeychain.self, LockKeychain.self, SetKeychainPassword.self,
            BackupKeychain.self, RestoreKeychain.self, ExportCommand.self, ImportCommand.self, ImportSecretService.self, ImportKeyring.self, AppCommand.self, DaemonCommand.self,
            SyncToolCommand.self,
            ShowKeychainInfo.self, SetKeychainSettings.self, ErrorCommand.self, Authorize.self,
            CreateKeychain.self, DeleteKeychain.self, ListKeychains.self, DefaultKeychain.self, LoginKeychain.self,
            AddCertificates.self, FindCertificate.self, DeleteCertificate.self, FindIdentity.self, VerifyCert.self,
            AddTrustedCert.self, RemoveTrustedCert.self, DumpTrustSettings.self, TrustSettingsExport.self, TrustSettingsImport.self,
            AddCRL.self,
            SetGenericPasswordPartitionList.self, SetInternetPasswordPartitionList.self, SetKeyPartitionList.self,
            LoginKeychainPAM.self, Approve.self, SSHAgentCommand.self, SSHKeyCommand.self,
            ListSmartCards.self, ExportSmartCard.self,
        ]
    )

    package init() {}

    /// Parses and runs a verb, printing errors as macOS does: keychain failures as `security: …` with the
    /// status's exit code, usage errors with the usage message and exit status 2.
    package static func runCommandLine() async {
        #if Network
        NetworkServices.install()
        #endif
        // argv as bytes: an account such as $'\xff' stays those bytes instead of becoming U+FFFD (RawArguments).
        let arguments = PromptRequest.normalized(RawArguments.commandLine())
        do {
            do {
                try await runOnce(arguments)
            } catch let failure as ToolFailure where failure.status == .interactionNotAllowed && failure.fromKeychain {
                // The keychain (or the item's class) is locked: as macOS does, ask on the terminal (never a pipe),
                // unlock, and run the command once more. (The keychaind client keeps the connection the passcode was given on.)
                let keychain = try ToolContext.keychain()
                let status: KeychainStore.Status
                do {
                    status = try keychain.status()
                } catch {
                    throw ToolFailure(UnlockKeychain.function, error)
                }
                let loginLocked = status.lockStatus == .beforeFirstUnlock || status.lockStatus == .locked
                if !loginLocked, let other = LockedKeychains.first(in: keychain, arguments: arguments) {
                    // Another keychain of the command (named, or in the search list) is locked: ask for its password.
                    let function = "SecKeychainUnlock \(other)"
                    let passcode = try PasswordPrompt.ask(
                        "password to unlock \(other): ", function: function,
                        hint: "The keychain \(other) is locked: unlock it with `security unlock-keychain \(other)`, or run the command from a terminal to be asked for its password.")
                    do {
                        try keychain.keychain(named: other).unlock(passcode: passcode)
                    } catch {
                        throw ToolFailure(function, error)
                    }
                    try await runOnce(arguments)
                    return
                }
                // keychaind asks for approvals itself, in its own prompt: only a locked keychain is unlocked here.
                guard loginLocked else { throw failure }
                let passcode = try PasswordPrompt.ask(
                    "password to unlock default: ", function: UnlockKeychain.function,
                    hint: "The keychain is locked; run the command from a terminal to be asked for the keychain's passcode, or unlock it with `security unlock-keychain`.")
                do {
                    try keychain.unlock(passcode: passcode)
                } catch {
                    throw ToolFailure(UnlockKeychain.function, error)
                }
                try await runOnce(arguments)
            }
        } catch let failure as ToolFailure {
            Output.standardError(failure.text)
            Foundation.exit(failure.exitCode)
        } catch {
            if exitCode(for: error) == .validationFailure {
                Output.standardError(fullMessage(for: error) + "\n")
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

extension SecurityTool {
    /// Parses `arguments` as a command line and runs its verb once.
    /// A verb that does not exist (also after `help`) fails here with exit status 2, naming the closest verb.
    static func runOnce(_ arguments: [String]) async throws {
        if let unknown = UnknownCommand.message(for: arguments) {
            Output.standardError(unknown)
            Foundation.exit(UnknownCommand.exitStatus)
        }
        var command = try parseAsRoot(arguments)
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    }
}

/// The verbs' shared trailing arguments and `--access-group`.
struct KeychainOptions: ParsableArguments {
    @Option(
        name: .customLong("access-group"),
        help: ArgumentHelp(
            "Add new items to this access group; find, delete and dump only items in it (default: every group).",
            valueName: "group"))
    var accessGroup: String?

    @Option(name: .customShort("k"), help: ArgumentHelp("The keychain to use (as a keychain given last).", valueName: "keychain"))
    var keychainOption: String?

    @Argument(
        help: ArgumentHelp(
            "Keychains to use: a name such as `work` (see `security list-keychains`) or its path. Searches look in them in order, adds go to the first; none: the search list and the default keychain.",
            valueName: "keychain"))
    var keychainArguments: [String] = []

    /// The keychains named, -k first.
    var keychains: [String] { (keychainOption.map { [$0] } ?? []) + keychainArguments }
}

/// macOS prompts for the password when `-w` (or `-p` for generic passwords) ends the command with no value.
/// Such a trailing flag is dropped before parsing, and the add verb then prompts because no password was given.
enum PromptRequest {
    /// The flags that take a value, per add verb (a trailing `-w` that is itself such a value is kept).
    static let valueFlags: [String: Set<String>] = [
        "add-generic-password": ["-a", "-c", "-C", "-D", "-G", "-j", "-k", "-l", "-s", "-p", "-w", "-X", "-T", "--access-group"],
        "add-internet-password": ["-a", "-c", "-C", "-d", "-D", "-j", "-k", "-l", "-p", "-P", "-r", "-s", "-t", "-w", "-X", "-T", "--access-group"],
    ]
    static let promptFlags: [String: Set<String>] = [
        "add-generic-password": ["-w", "-p"],
        "add-internet-password": ["-w"],
    ]

    static func normalized(_ arguments: [String]) -> [String] {
        guard let verb = arguments.first, let valueFlags = valueFlags[verb], let promptFlags = promptFlags[verb],
            let last = arguments.last, arguments.count > 1, promptFlags.contains(last)
        else { return arguments }
        var expectsValue = false
        for argument in arguments.dropFirst().dropLast() {
            if expectsValue {
                expectsValue = false
            } else if argument == "--" {
                return arguments
            } else {
                expectsValue = valueFlags.contains(argument)
            }
        }
        return expectsValue ? arguments : Array(arguments.dropLast())
    }
}
