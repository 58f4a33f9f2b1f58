import ArgumentParser
import Foundation
import KeychainCore
import KeychainKit
import KeychainSSH

/// `security ssh`: the SSH keys keychaind's agent serves, kept in the keychain.
struct SSHKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh",
        abstract: "Keep SSH keys in the keychain, for keychaind's SSH agent.",
        discussion: """
            The keys live in the keychain's access group keychain.ssh, sealed like every item and on this machine \
            only; keychaind --ssh-agent serves them (security ssh-agent --env prints SSH_AUTH_SOCK). `add` imports an \
            OpenSSH private key file (its passphrase asked once, on the terminal or as one line of standard input); \
            `create` makes a P-256 key that never leaves the keychain — inside the TPM when keychaind has one — and \
            prints its public key for authorized_keys. `list` prints the public keys, each followed by a tab and where \
            the private key is: (imported), (in the TPM) or (held by keychaind). With --presence each use asks the person (the keychain passcode, \
            or a confirmation when none is set), the prompt naming the program and host. ssh-add -d/-D never remove \
            keys made by `create`; `remove` does.
            """,
        subcommands: [SSHAddKey.self, SSHCreateKey.self, SSHListKeys.self, SSHRemoveKey.self]
    )

    /// The access control of a key used only with the person's presence.
    static func presenceControl(_ presence: Bool, forTokenKey: Bool) throws(ToolFailure) -> KeychainAccessControl? {
        guard presence else { return nil }
        do {
            let constraints: KeychainAccessControl.Constraints = forTokenKey ? [.userPresence, .privateKeyUsage] : [.userPresence]
            return try KeychainAccessControl(constraints, accessibility: .whenUnlockedThisDeviceOnly)
        } catch {
            throw ToolFailure("SecAccessControlCreateWithFlags", error)
        }
    }

    /// `body`'s result, nil when it found nothing (`errSecItemNotFound`); other errors are thrown.
    static func orNone<T>(_ body: () throws(KeychainError) -> T) throws(KeychainError) -> T? {
        do {
            return try body()
        } catch  where error.code == .itemNotFound {
            return nil
        }
    }

    static func value(_ value: AttributeValue) -> KeychainItem.Value? {
        switch value {
        case .string(let text): .string(text)
        case .data(let data): .data(data)
        case .int(let number): .int(number)
        default: nil
        }
    }
}

/// `security ssh add FILE`: imports an OpenSSH private key file.
struct SSHAddKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Import an OpenSSH private key file (Ed25519, ECDSA P-256, RSA) into the keychain.")

    @Argument(help: ArgumentHelp("The private key file (~/.ssh/id_ed25519 …).", valueName: "file"))
    var file: String

    @Option(name: .customShort("C"), help: ArgumentHelp("The comment ssh-add -l shows (default: the file's).", valueName: "comment"))
    var comment: String?

    @Flag(name: .customShort("c"), help: "Confirm each use (as ssh-add -c).")
    var confirm = false

    @Option(name: .customShort("t"), help: ArgumentHelp("Forget the key after this many seconds (as ssh-add -t).", valueName: "seconds"))
    var lifetime: UInt32?

    @Flag(name: .long, help: "Ask for the person's presence at each use (the keychain passcode, or a confirmation).")
    var presence = false

    func run() throws {
        let function = "ssh add"
        guard let text = try? String(contentsOfFile: file, encoding: .utf8), text.utf8.count <= OpenSSHPrivateKeyFile.maximumSize else {
            throw ToolFailure.input(function, "\(file) cannot be read as an OpenSSH private key file (at most 64 KiB).")
        }
        let envelope: OpenSSHPrivateKeyFile.Envelope
        do {
            envelope = try OpenSSHPrivateKeyFile.envelope(text)
        } catch {
            throw ToolFailure(function, error)
        }
        var passphrase: [UInt8]? = nil
        if envelope.isEncrypted {
            // Asked once: the key is stored decrypted and sealed, so it is never asked again.
            if isatty(STDIN_FILENO) != 0 {
                passphrase = Array(try PasswordPrompt.ask("Enter passphrase for \(file): ", function: function, hint: "Give it as one line of standard input.").utf8)
            } else {
                passphrase = Array(try StandardInputSecret.line(function: function, what: "the passphrase"))
            }
        }
        let key: SSHPrivateKey, fileComment: String
        do {
            (key, fileComment) = try OpenSSHPrivateKeyFile.open(envelope, passphrase: passphrase)
        } catch {
            throw ToolFailure(function, error)
        }
        if let lifetime, lifetime == 0 { throw ToolFailure.input(function, "-t takes a number of seconds above 0.") }
        let constraints = SSHKeyConstraints(
            expires: lifetime.map { Date().addingTimeInterval(TimeInterval($0)) }, confirm: confirm)
        let (attributes, secret) = SSHKeyStore.item(key, comment: comment ?? fileComment, constraints: constraints)
        var values = attributes.compactMapValues(SSHKeyCommand.value)
        let control = try SSHKeyCommand.presenceControl(presence, forTokenKey: false)
        if control != nil { values["pdmn"] = nil }
        let store = try ToolContext.keychain(accessGroup: SSHKeyStore.group, function: function)
        do {
            // The same key again replaces the old one (with its comment and constraints).
            var existing = KeychainQuery(.genericPassword, attributes: ["agrp": .string(SSHKeyStore.group), "svce": .string("ssh-key")])
            existing.attributes["acct"] = .string(key.publicKey.fingerprint)
            _ = try SSHKeyCommand.orNone { () throws(KeychainError) in try store.deleteItems(matching: existing) }
            try store.addItem(.genericPassword, attributes: values, data: secret, accessControl: control)
        } catch {
            throw ToolFailure(function, error)
        }
        Output.standardOutput("Identity added: \(file) (\(comment ?? fileComment))\n")
    }
}

/// `security ssh create`: a P-256 key that never leaves the keychain.
struct SSHCreateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Make an ECDSA P-256 SSH key that never leaves the keychain (in the TPM when there is one); print its public key.")

    @Option(name: .customShort("C"), help: ArgumentHelp("The key's comment (its label).", valueName: "comment"))
    var comment = "keychain"

    @Flag(name: .long, help: "Ask for the person's presence at each use (the keychain passcode, or a confirmation).")
    var presence = false

    func run() throws {
        let function = "ssh create"
        let store = try ToolContext.keychain(accessGroup: SSHKeyStore.group, function: function)
        var attributes: [String: KeychainItem.Value] = [
            "agrp": .string(SSHKeyStore.group), "atag": .data(SSHKeyStore.tokenKeyTag), "labl": .string(comment),
        ]
        let control = try SSHKeyCommand.presenceControl(presence, forTokenKey: true)
        if control == nil { attributes["pdmn"] = .string(ProtectionClass.whenUnlockedThisDeviceOnly.rawValue) }
        let item: KeychainItem
        do {
            item = try store.createTokenKey(attributes: attributes, accessControl: control)
        } catch {
            throw ToolFailure(function, error)
        }
        guard let point = item.tokenPublicKey else {
            throw ToolFailure(function, status: .internal, detail: "The new key's public key did not come back.")
        }
        Output.standardOutput(SSHPublicKey.ecdsaP256(point: Array(point)).authorizedKeysLine(comment: comment) + "\n")
    }
}

/// `security ssh list`: the keys, as `ssh-add -L` prints them.
struct SSHListKeys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print the keychain's SSH keys' public keys, as ssh-add -L does, and where each is.")

    func run() throws {
        let function = "ssh list"
        let store = try ToolContext.keychain(accessGroup: SSHKeyStore.group, createIfMissing: false, function: function)
        var lines: [String] = []
        do throws(KeychainError) {
            var stored = KeychainQuery(.genericPassword, attributes: ["agrp": .string(SSHKeyStore.group), "svce": .string("ssh-key")])
            stored.limit = .all
            for item in try SSHKeyCommand.orNone({ () throws(KeychainError) in try store.items(matching: stored) }) ?? [] {
                guard case .data(let generic)? = item.attributes["gena"], let (blob, _) = try? SSHKeyConstraints.read(stored: Array(generic)),
                    let key = try? SSHPublicKey(blob: blob)
                else { continue }
                lines.append(key.authorizedKeysLine(comment: item.attributes["labl"]?.stringValue ?? "") + "\t(imported)")
            }
            var tokens = KeychainQuery(.key, attributes: ["agrp": .string(SSHKeyStore.group), "atag": .data(SSHKeyStore.tokenKeyTag)])
            tokens.limit = .all
            for item in try SSHKeyCommand.orNone({ () throws(KeychainError) in try store.tokenKeys(matching: tokens) }) ?? [] {
                guard let point = item.tokenPublicKey else { continue }
                let key = SSHPublicKey.ecdsaP256(point: Array(point))
                let place = item.attributes["crtr"]?.intValue == TokenKeys.creator ? "(in the TPM)" : "(held by keychaind)"
                lines.append(key.authorizedKeysLine(comment: item.attributes["labl"]?.stringValue ?? "") + "\t" + place)
            }
        } catch {
            throw ToolFailure(function, error)
        }
        guard !lines.isEmpty else {
            Output.standardError("The keychain has no SSH keys.\n")
            throw ExitCode(1)
        }
        Output.standardOutput(lines.joined(separator: "\n") + "\n")
    }
}

/// `security ssh remove`: deletes a key, by fingerprint or public key file.
struct SSHRemoveKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Delete an SSH key from the keychain, named by its SHA256 fingerprint or its .pub file.")

    @Argument(help: ArgumentHelp("SHA256:… or a public key file.", valueName: "key"))
    var key: String

    func run() throws {
        let function = "ssh remove"
        let fingerprint: String
        if key.hasPrefix("SHA256:") {
            fingerprint = key
        } else {
            guard let line = try? String(contentsOfFile: key, encoding: .utf8), let field = line.split(separator: " ").dropFirst().first,
                let blob = Data(base64Encoded: String(field)), let publicKey = try? SSHPublicKey(blob: Array(blob))
            else {
                throw ToolFailure.input(function, "\(key) is neither a SHA256: fingerprint nor a public key file.")
            }
            fingerprint = publicKey.fingerprint
        }
        let store = try ToolContext.keychain(accessGroup: SSHKeyStore.group, createIfMissing: false, function: function)
        var removed = 0
        do throws(KeychainError) {
            let stored = KeychainQuery(
                .genericPassword, attributes: ["agrp": .string(SSHKeyStore.group), "svce": .string("ssh-key"), "acct": .string(fingerprint)])
            removed += try SSHKeyCommand.orNone { () throws(KeychainError) in try store.deleteItems(matching: stored) } ?? 0
            var tokens = KeychainQuery(.key, attributes: ["agrp": .string(SSHKeyStore.group), "atag": .data(SSHKeyStore.tokenKeyTag)])
            tokens.limit = .all
            for item in try SSHKeyCommand.orNone({ () throws(KeychainError) in try store.tokenKeys(matching: tokens) }) ?? [] {
                guard let point = item.tokenPublicKey, SSHPublicKey.ecdsaP256(point: Array(point)).fingerprint == fingerprint else { continue }
                var one = KeychainQuery(.key)
                one.persistentReference = item.persistentReference
                removed += try store.deleteItems(matching: one)
            }
        } catch {
            throw ToolFailure(function, error)
        }
        guard removed > 0 else { throw ToolFailure(function, status: .itemNotFound) }
        Output.standardOutput("Removed \(fingerprint)\n")
    }
}
