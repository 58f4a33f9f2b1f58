import ArgumentParser
import Foundation
import KeychainKit

extension KeychainStore.Settings.SecretServicePolicy: ExpressibleByArgument {}

/// `security show-keychain-info`: the keychain's lock settings, in macOS's one-line form.
struct ShowKeychainInfo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show-keychain-info",
        abstract: "Show the settings for keychain.",
        discussion: """
            Prints `Keychain "<path>"`, then `lock-on-sleep` when set, then `timeout=<seconds>s` or `no-timeout`. \
            Without settings of its own the keychain locks after keychaind's --idle-lock time (600 seconds unless keychaind was started with another), \
            and a program that opened the keychain itself after 600 seconds without use.
            """
    )

    @OptionGroup var keychainNames: KeychainNames

    func run() async throws {
        let function = "SecKeychainCopySettings default"
        let store = try ToolContext.keychain(createIfMissing: false, function: function, named: keychainNames.first)
        let settings: KeychainStore.Settings?
        do {
            settings = try store.settings()
        } catch {
            throw ToolFailure(function, error)
        }
        var line = "Keychain \"\(store.databasePath)\""
        if settings?.lockOnSleep == true { line += " lock-on-sleep" }
        let timeout = settings == nil ? KeychainStore.Settings.defaultIdleTimeout : settings?.idleTimeout
        line += timeout.map { " timeout=\($0.components.seconds)s" } ?? " no-timeout"
        Output.standardOutput(line + "\n")
    }
}

/// `security set-keychain-settings`: lock after an idle time, and lock on sleep.
struct SetKeychainSettings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-keychain-settings",
        abstract: "Set settings for keychain.",
        discussion: """
            -t locks the keychain after that many seconds without use (time asleep counts); without -t it never \
            locks on its own (macOS's "no timeout"). The lock happens where the unlocked keys are: in keychaind, which \
            picks the settings up within a second (they replace its --idle-lock default), or in a program that opened \
            the keychain itself. -l locks it when the machine has been suspended: on resume, before anything is \
            answered, since Linux tells a program it slept only afterwards (locking as the machine suspends would \
            take logind's PrepareForSleep signal over D-Bus, which is not watched). Through keychaind the settings are \
            changed by the daemon, which asks for the passcode first when one is set.
            """
    )

    @Flag(name: .customShort("l"), help: "Lock keychain when the system sleeps (on resume, before any request is answered).")
    var lockOnSleep = false

    @Flag(name: .customShort("u"), help: "Lock keychain after timeout interval (with -t; alone, after 300 seconds).")
    var useTimeout = false

    @Option(name: .customShort("t"), help: ArgumentHelp("Specify timeout interval in seconds (omitting this option specifies \"no timeout\").", valueName: "timeout"))
    var timeout: Int?

    @Option(
        name: .customLong("pinentry"),
        help: ArgumentHelp(
            "The installed pinentry that asks for the passcode and approvals: /usr/bin/pinentry, /usr/bin/pinentry-*, or another program only root can change. Kept when not given.", valueName: "path")
    )
    var pinentry: String?

    @Option(
        name: .customLong("prompt-timeout"),
        help: ArgumentHelp("Seconds before an unanswered prompt is stopped and its request fails as cancelled (1-600; default 60). Kept when not given.", valueName: "seconds"))
    var promptTimeout: Int?

    @Option(
        name: .customLong("secret-service-unregistered"),
        help: ArgumentHelp(
            "What the Secret Service does for programs that are not registered: ask (the person allows once, always or denies), allow (every program of the user, as gnome-keyring), or deny. KEYCHAIN_SECRET_SERVICE_UNREGISTERED overrides it. Kept when not given.",
            valueName: "ask|allow|deny"))
    var secretServiceUnregistered: KeychainStore.Settings.SecretServicePolicy?

    @OptionGroup var keychainNames: KeychainNames

    func validate() throws {
        if let timeout, timeout <= 0 { throw ValidationError("The timeout must be a positive number of seconds.") }
        if let pinentry, !pinentry.hasPrefix("/") { throw ValidationError("--pinentry needs an absolute path, such as /usr/bin/pinentry-gnome3.") }
        if let promptTimeout, !(1...600).contains(promptTimeout) { throw ValidationError("--prompt-timeout must be between 1 and 600 seconds.") }
    }

    func run() async throws {
        let function = "SecKeychainSetSettings default"
        let store = try ToolContext.keychain(function: function, named: keychainNames.first)
        do {
            // The prompt settings are not macOS's: they are kept unless given.
            let current = try store.settings()
            let idle = timeout ?? (useTimeout ? 300 : nil)
            let settings = KeychainStore.Settings(
                idleTimeout: idle.map { .seconds($0) }, lockOnSleep: lockOnSleep,
                pinentryProgram: pinentry ?? current?.pinentryProgram,
                promptTimeout: promptTimeout.map { .seconds($0) } ?? current?.promptTimeout,
                secretServiceUnregistered: secretServiceUnregistered ?? current?.secretServiceUnregistered,
                syncNewItems: current?.syncNewItems ?? false)
            try store.setSettings(settings)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// `security error`: the message for an `OSStatus`.
struct ErrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "error",
        abstract: "Display a descriptive message for the given error code(s).",
        discussion: "Each code is decimal (-25300) or hexadecimal (0xFFFF9D2C); prints `Error: 0x<hex> <decimal> <message>`."
    )

    // Negative codes look like options to the parser: take every argument as it comes.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The OSStatus values to describe.", valueName: "error code"))
    var codes: [String] = []

    func validate() throws {
        if codes.isEmpty { throw ValidationError("Give at least one error code.") }
        for text in codes where Self.parse(text) == nil {
            throw ValidationError("'\(text)' is not an error code: give a decimal number like -25300 or a hex one like 0xFFFF9D2C.")
        }
    }

    func run() async throws {
        var out = ""
        for text in codes {
            guard let status = Self.parse(text) else { continue }  // refused by validate()
            let hex = String(UInt32(bitPattern: status), radix: 16, uppercase: true)
            let padded = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
            out += "Error: 0x\(padded) \(status) \(KeychainStatus(rawValue: status).message)\n"
        }
        Output.standardOutput(out)
    }

    static func parse(_ text: String) -> Int32? {
        let lower = text.lowercased()
        if lower.hasPrefix("0x"), let bits = UInt32(lower.dropFirst(2), radix: 16) { return Int32(bitPattern: bits) }
        return Int32(text)
    }
}
