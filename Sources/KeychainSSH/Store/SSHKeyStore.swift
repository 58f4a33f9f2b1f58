import Crypto
import Foundation
import KeychainCore

/// One key the agent serves, as listed: where it is kept, its public key, comment and constraints.
package struct SSHAgentKey: Sendable, Hashable {
    /// Where the private key is.
    package enum Source: Sendable, Hashable {
        /// Added through the agent or `security ssh add`: sealed in a generic password item.
        case stored
        /// A key that never leaves the keychain (`kSecAttrTokenIDSecureEnclave`: in the TPM, or held by keychaind),
        /// made by `security ssh create`: the item's reference.
        case token(PersistentReference)
    }

    /// Where the private key is.
    package var source: Source
    /// The public key.
    package var publicKey: SSHPublicKey
    /// The comment `ssh-add -l` prints.
    package var comment: String
    /// The constraints it was added with.
    package var constraints: SSHKeyConstraints
    /// The item's access control, when it has one: a key whose control asks for presence is used only after the
    /// person proves it, per use.
    package var accessControl: AccessControl?
    /// The item's reference.
    package var reference: PersistentReference
}

/// The SSH keys the agent serves, kept in the keychain, in the access group ``group`` (which a program reaches only
/// when the person registers it with that group):
/// - keys added through the agent (`ssh-add`) or `security ssh add`: generic passwords of service `ssh-key`, account
///   the key's fingerprint, label its comment, generic attribute its public blob and constraints
///   (``SSHKeyConstraints/stored(publicKey:_:)``), and as secret the private key in the agent protocol's encoding —
///   sealed like every item, on this device only (`kSecAttrAccessibleWhenUnlockedThisDeviceOnly`);
/// - P-256 keys that never leave the keychain (`kSecAttrTokenIDSecureEnclave`), tagged for SSH with the application
///   tag ``tokenKeyTag``: made by `security ssh create`, listed and used here, never removed by `ssh-add -d/-D`.
package struct SSHKeyStore: Sendable {
    /// The reserved access group of SSH keys.
    package static let group = "keychain.ssh"
    /// The application tag (`kSecAttrApplicationTag`) of the token keys the agent serves.
    package static let tokenKeyTag = Data("ssh-agent".utf8)
    /// The most keys kept (an add past it is refused).
    package static let maximumKeys = 256

    /// The keychain.
    package let engine: KeychainEngine
    /// The time (injected by tests of lifetimes).
    package let now: @Sendable () -> Date

    /// A store on `engine`.
    package init(engine: KeychainEngine, now: @escaping @Sendable () -> Date = { Date() }) {
        self.engine = engine
        self.now = now
    }

    /// The agent's own access to the group; prompts name the program it serves (see ``sign(with:data:flags:caller:prompter:reason:)``).
    package static var caller: AccessPolicy { AccessPolicy(groups: [group]) }

    static func query(fingerprint: String? = nil) -> ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string(group)
        q.attributes["svce"] = .string("ssh-key")
        if let fingerprint { q.attributes["acct"] = .string(fingerprint) }
        return q
    }

    static func tokenQuery() -> ItemQuery {
        var q = ItemQuery(itemClass: .key)
        q.attributes["agrp"] = .string(group)
        q.attributes["atag"] = .data(tokenKeyTag)
        q.attributes["kcls"] = .int(KeyClass.privateKey.rawValue)
        return q
    }

    /// Every key, in the order they were added, the token keys after the others. Expired keys are deleted first;
    /// damaged items are left out.
    package func keys() throws(KeychainError) -> [SSHAgentKey] {
        _ = try removeExpired()
        return try storedItems().compactMap(Self.storedKey) + tokenKeys()
    }

    /// The key whose public blob is `blob`, nil when there is none (an expired key is deleted, and none). One
    /// lookup by fingerprint; the token keys are searched only for a P-256 key the agent did not add.
    package func key(blob: [UInt8]) throws(KeychainError) -> SSHAgentKey? {
        guard let publicKey = try? SSHPublicKey(blob: blob) else { return nil }
        var q = Self.query(fingerprint: publicKey.fingerprint)
        q.returns = ReturnOptions(attributes: true)
        if let item = try found(q).first, let key = Self.storedKey(item), key.publicKey == publicKey {
            guard !key.constraints.expired(at: now()) else {
                _ = try delete(Self.query(fingerprint: publicKey.fingerprint))
                return nil
            }
            return key
        }
        guard case .ecdsaP256 = publicKey else { return nil }
        return try tokenKeys().first { $0.publicKey == publicKey }
    }

    private func tokenKeys() throws(KeychainError) -> [SSHAgentKey] {
        var q = Self.tokenQuery()
        q.limit = .all
        q.returns = ReturnOptions(attributes: true, ref: true)
        return try found(q).compactMap { item in
            guard let point = item.tokenPublicKey, let publicKey = try? SSHPublicKey(blob: SSHPublicKey.ecdsaP256(point: Array(point)).blob)
            else { return nil }
            return SSHAgentKey(
                source: .token(item.persistentRef), publicKey: publicKey, comment: item.attributes["labl"]?.stringValue ?? "",
                constraints: SSHKeyConstraints(), accessControl: KeychainEngine.accessControl(item.attributes), reference: item.persistentRef)
        }
    }

    private func storedItems() throws(KeychainError) -> [FoundItem] {
        var q = Self.query()
        q.limit = .all
        q.returns = ReturnOptions(attributes: true)
        return try found(q).sorted { Self.created($0) < Self.created($1) }
    }

    private static func created(_ item: FoundItem) -> Date {
        if case .date(let date)? = item.attributes["cdat"] { return date }
        return .distantPast
    }

    private static func storedKey(_ item: FoundItem) -> SSHAgentKey? {
        guard case .data(let stored)? = item.attributes["gena"], let (blob, constraints) = try? SSHKeyConstraints.read(stored: Array(stored)),
            let publicKey = try? SSHPublicKey(blob: blob)
        else { return nil }
        return SSHAgentKey(
            source: .stored, publicKey: publicKey, comment: item.attributes["labl"]?.stringValue ?? "", constraints: constraints,
            accessControl: KeychainEngine.accessControl(item.attributes), reference: item.persistentRef)
    }

    /// The item attributes and secret that keep `key` with `comment` and `constraints`: what the agent adds, and
    /// what `security ssh add` adds through its own connection.
    package static func item(
        _ key: SSHPrivateKey, comment: String, constraints: SSHKeyConstraints
    ) -> (attributes: [String: AttributeValue], secret: Data) {
        let fingerprint = key.publicKey.fingerprint
        var attributes: [String: AttributeValue] = [
            "agrp": .string(group), "svce": .string("ssh-key"), "acct": .string(fingerprint), "labl": .string(comment),
            "gena": .data(Data(SSHKeyConstraints.stored(publicKey: key.publicKey.blob, constraints))),
            "pdmn": .string(ProtectionClass.whenUnlockedThisDeviceOnly.rawValue),
        ]
        attributes["desc"] = .string("SSH key")
        var writer = SSHWireWriter()
        key.write(to: &writer)
        return (attributes, Data(writer.bytes))
    }

    /// Keeps `key` with `comment` and `constraints`, replacing a key with the same public key.
    package func add(_ key: SSHPrivateKey, comment: String, constraints: SSHKeyConstraints = SSHKeyConstraints()) throws(KeychainError) {
        _ = try delete(Self.query(fingerprint: key.publicKey.fingerprint))
        guard try storedItems().count < Self.maximumKeys else {
            throw KeychainError(code: .invalidParameter, message: "The keychain holds \(Self.maximumKeys) SSH keys already. Remove one first (ssh-add -d, or security ssh remove).")
        }
        let (attributes, secret) = Self.item(key, comment: comment, constraints: constraints)
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = attributes
        q.valueData = secret
        _ = try engine.add(q, caller: Self.caller)
    }

    /// Signs `data` with `key` for the program `caller` names. A key whose access control asks for presence is
    /// used only after `prompter` obtains the proof, for this one use; the prompt names the program and `reason`
    /// (the host, when the client bound its session). `errSecUserCanceled` when the person refuses.
    package func sign(
        with key: SSHAgentKey, data: [UInt8], flags: UInt32, caller: AccessPolicy, prompter: any PresencePrompter,
        reason: String
    ) throws(KeychainError) -> [UInt8] {
        var options = AuthenticationOptions()
        options.context = .random()
        options.operationPrompt = reason
        switch key.source {
        case .stored:
            var q = Self.query(fingerprint: key.publicKey.fingerprint)
            q.returns = ReturnOptions(data: true)
            q.authentication = options
            let items = try withPresence(options, caller: caller, prompter: prompter) { () throws(KeychainError) in try found(q, caller: caller) }
            guard let secret = items.first?.data else { throw KeychainError(code: .itemNotFound, message: "The SSH key is no longer in the keychain.") }
            var reader = SSHWireReader(secret)
            let privateKey = try SSHPrivateKey.read(from: &reader)
            guard privateKey.publicKey == key.publicKey else {
                throw KeychainError(code: .corruptData, message: "A stored SSH key does not match its fingerprint.")
            }
            return try privateKey.signature(of: data, flags: flags)
        case .token(let reference):
            let request = TokenKeyRequest.sign(reference: reference, algorithm: "algid:sign:ECDSA:message-X962:SHA256", input: Data(data))
            let result = try withPresence(options, caller: caller, prompter: prompter) { () throws(KeychainError) in
                try engine.tokenKey(request, caller: caller, authentication: options)
            }
            guard case .data(let der) = result, let signature = try? P256.Signing.ECDSASignature(derRepresentation: der) else {
                throw KeychainError(code: .internal, message: "The key's signature could not be read.")
            }
            let raw = Array(signature.rawRepresentation)
            var inner = SSHWireWriter()
            inner.mpint(unsigned: raw[..<32])
            inner.mpint(unsigned: raw[32...])
            var writer = SSHWireWriter()
            writer.string("ecdsa-sha2-nistp256")
            writer.string(inner.bytes)
            return writer.bytes
        }
    }

    /// Runs `body`; when it needs the person's presence, obtains the proof under `options`' context and runs it
    /// once more.
    private func withPresence<T>(
        _ options: AuthenticationOptions, caller: AccessPolicy, prompter: any PresencePrompter, _ body: () throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        do {
            return try body()
        } catch  where error.code == .authenticationNeeded && !error.presenceNeeded.isEmpty {
            for requirement in error.presenceNeeded {
                try engine.authenticate(requirement, options: options, caller: caller, prompter: prompter, biometrics: NoBiometrics())
            }
            return try body()
        }
    }

    /// Removes the key whose public blob is `blob` when the agent added it: whether there was one. Token keys are
    /// not removed (`security ssh remove` deletes them).
    package func remove(blob: [UInt8]) throws(KeychainError) -> Bool {
        guard let publicKey = try? SSHPublicKey(blob: blob) else { return false }
        return try delete(Self.query(fingerprint: publicKey.fingerprint)) > 0
    }

    /// Removes every key the agent added (and nothing else of the keychain: neither token keys nor other items):
    /// how many there were.
    package func removeAll() throws(KeychainError) -> Int {
        try delete(Self.query())
    }

    /// Deletes the keys whose lifetime has passed: how many.
    package func removeExpired() throws(KeychainError) -> Int {
        let time = now()
        var removed = 0
        for item in try storedItems() {
            guard let key = Self.storedKey(item), key.constraints.expired(at: time) else { continue }
            removed += try delete(Self.query(fingerprint: key.publicKey.fingerprint))
        }
        return removed
    }

    private func found(_ q: ItemQuery, caller: AccessPolicy = SSHKeyStore.caller) throws(KeychainError) -> [FoundItem] {
        do {
            return try engine.find(q, caller: caller)
        } catch  where error.code == .itemNotFound {
            return []
        }
    }

    /// Deletes what `q` matches: how many (0 when nothing did).
    private func delete(_ q: ItemQuery) throws(KeychainError) -> Int {
        do {
            return try engine.delete(q, caller: Self.caller)
        } catch  where error.code == .itemNotFound {
            return 0
        }
    }
}
