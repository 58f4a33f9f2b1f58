import Crypto
import Foundation
import KeychainCore
import KeychainSSH
import KeychainTestSupport
import Synchronization
import Testing

/// The agent's answers on a real keychain (SQLite file, sealed items), with an injected clock for lifetimes and a
/// scripted person for confirmations: constraints honoured, the lock on the keychain passcode, destination
/// constraints checked against bound sessions, token keys listed and used.
@Suite struct SSHAgentHandlerTests {
    final class Clock: Sendable {
        let seconds = Mutex(1_900_000_000.0)
        var now: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    /// A person answering each prompt from a queue (true: allow), recording what each prompt said.
    final class Person: PresencePrompter, Sendable {
        let answers = Mutex<[Bool]>([])
        let asked = Mutex<[String]>([])
        func askSecret(_ text: PromptText) -> PromptOutcome<Data> {
            asked.withLock { $0.append(text.description) }
            return .cancelled
        }
        func confirm(_ text: PromptText) -> PromptOutcome<Bool> {
            asked.withLock { $0.append(text.description) }
            let answer = answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            return answer.map { .answered($0) } ?? .cancelled
        }
        func askConsent(_ text: PromptText) -> PromptOutcome<ConsentAnswer> { .cancelled }
    }

    final class Rig: @unchecked Sendable {
        let home = NSTemporaryDirectory() + "ssh-handler-\(UUID().uuidString.prefix(8))"
        let clock = Clock()
        let person = Person()
        let engine: KeychainEngine
        let handler: SSHAgentHandler
        var connection = SSHAgentConnection(peer: SSHAgentPeer(pid: 4242, uid: 0, program: "/usr/bin/ssh"))

        init() throws {
            let clock = clock
            engine = try KeychainEngine(location: KeychainLocation(home: home), now: { clock.now }, tpm: nil, passcodePolicy: .testing)
            let person = person
            handler = SSHAgentHandler(store: SSHKeyStore(engine: engine, now: { clock.now }), logger: .init(label: "test")) { _ in person }
        }

        deinit { try? FileManager.default.removeItem(atPath: home) }

        func answer(_ request: SSHAgentRequest) -> SSHAgentResponse { handler.answer(request, connection: &connection) }

        var listed: [String] {
            guard case .identities(let identities) = answer(.requestIdentities) else { return ["(failure)"] }
            return identities.map(\.comment)
        }
    }

    static func ed25519() -> SSHPrivateKey {
        let key = Curve25519.Signing.PrivateKey()
        return .ed25519(seed: Array(key.rawRepresentation), publicKey: Array(key.publicKey.rawRepresentation))
    }

    static func signature(_ response: SSHAgentResponse) -> [UInt8]? {
        if case .signature(let bytes) = response { return bytes }
        return nil
    }

    @Test func aKeyIsForgottenWhenItsLifetimeEnds() throws {
        let rig = try Rig()
        let key = Self.ed25519()
        #expect(rig.answer(.addIdentity(key, comment: "short-lived", constraints: [.lifetime(seconds: 60)])) == .success)
        #expect(rig.listed == ["short-lived"])
        rig.clock.advance(59)
        #expect(Self.signature(rig.answer(.sign(key: key.publicKey.blob, data: [1, 2, 3], flags: 0))) != nil)
        rig.clock.advance(2)
        #expect(rig.listed == [])
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: [1, 2, 3], flags: 0)) == .failure)
        // Deleted from the keychain, not only hidden.
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["agrp"] = .string(SSHKeyStore.group)
        expectKeychainError(.itemNotFound) { _ = try rig.engine.find(q, caller: AccessPolicy(groups: ["*"])) }
    }

    @Test func anUnknownConstraintRefusesTheAdd() throws {
        let rig = try Rig()
        let added = rig.answer(.addIdentity(Self.ed25519(), comment: "k", constraints: [.otherExtension(name: "sk-provider@openssh.com", contents: [0, 0, 0, 0])]))
        #expect(added == .failure)
        #expect(rig.listed == [])
    }

    @Test func confirmationIsAskedAtEachUseNamingTheProgram() throws {
        let rig = try Rig()
        let key = Self.ed25519()
        #expect(rig.answer(.addIdentity(key, comment: "careful", constraints: [.confirm])) == .success)
        rig.person.answers.withLock { $0 = [false, true] }
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: [9], flags: 0)) == .failure)
        let signed = try #require(Self.signature(rig.answer(.sign(key: key.publicKey.blob, data: [9], flags: 0))))
        #expect(key.publicKey.verifies(signed, of: [9]))
        let asked = rig.person.asked.withLock { $0 }
        #expect(asked.count == 2)
        #expect(asked.allSatisfy { $0.contains("/usr/bin/ssh (process 4242)") && $0.contains("“careful”") && $0.contains(key.publicKey.fingerprint) })
    }

    @Test func anAccessControlAsksForPresenceAtEachUse() throws {
        let rig = try Rig()
        let key = Self.ed25519()
        // As `security ssh add --presence` stores it: the item's access control asks for presence (no passcode set:
        // a confirmation).
        let (attributes, secret) = SSHKeyStore.item(key, comment: "guarded", constraints: SSHKeyConstraints())
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = attributes
        q.attributes["accc"] = .data(try AccessControl(protection: .whenUnlockedThisDeviceOnly, flags: .userPresence).encoded)
        q.valueData = secret
        _ = try rig.engine.add(q, caller: AccessPolicy(groups: [SSHKeyStore.group]))
        #expect(rig.listed == ["guarded"])
        rig.person.answers.withLock { $0 = [false, true, true] }
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: [1], flags: 0)) == .failure)
        #expect(Self.signature(rig.answer(.sign(key: key.publicKey.blob, data: [1], flags: 0))) != nil)
        // Per use: the next signature asks again.
        #expect(Self.signature(rig.answer(.sign(key: key.publicKey.blob, data: [2], flags: 0))) != nil)
        #expect(rig.person.asked.withLock { $0.count } == 3)
        #expect(rig.person.asked.withLock { $0.last ?? "" }.contains("/usr/bin/ssh (process 4242)"))
    }

    @Test func lockingTakesTheKeychainPasscode() throws {
        let rig = try Rig()
        let key = Self.ed25519()
        #expect(rig.answer(.addIdentity(key, comment: "k", constraints: [])) == .success)
        // No passcode: nothing to lock with.
        #expect(rig.answer(.lock(passphrase: Array("anything".utf8))) == .failure)
        try rig.engine.changePasscode(from: nil, to: "1234")
        #expect(rig.answer(.lock(passphrase: Array("0000".utf8))) == .failure)
        #expect(!rig.handler.isLocked)
        #expect(rig.answer(.lock(passphrase: Array("1234".utf8))) == .success)
        #expect(rig.listed == [])
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: [1], flags: 0)) == .failure)
        #expect(rig.answer(.removeAllIdentities) == .failure)
        #expect(rig.answer(.unlock(passphrase: Array("0000".utf8))) == .failure)
        #expect(rig.answer(.unlock(passphrase: Array("1234".utf8))) == .success)
        #expect(rig.listed == ["k"])
    }

    /// What `ssh` asks the agent to sign when it logs in as `user` on the session `sessionID` to the host `hostKey`.
    static func login(user: String, sessionID: [UInt8], key: SSHPublicKey, hostKey: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.string(sessionID)
        writer.byte(50)
        writer.string(user)
        writer.string("ssh-connection")
        writer.string("publickey-hostbound-v00@openssh.com")
        writer.boolean(true)
        writer.string(key.typeName)
        writer.string(key.blob)
        writer.string(hostKey)
        return writer.bytes
    }

    static func bind(_ host: Curve25519.Signing.PrivateKey, sessionID: [UInt8], forwarding: Bool = false) throws -> SSHAgentRequest {
        let hostKey = SSHPrivateKey.ed25519(seed: Array(host.rawRepresentation), publicKey: Array(host.publicKey.rawRepresentation))
        return .sessionBind(hostKey: hostKey.publicKey.blob, sessionID: sessionID, signature: try hostKey.signature(of: sessionID), forwarding: forwarding)
    }

    @Test func aDestinationConstrainedKeySignsOnlyLoginsToItsHost() throws {
        let rig = try Rig()
        let key = Self.ed25519()
        let host = Curve25519.Signing.PrivateKey(), stranger = Curve25519.Signing.PrivateKey()
        let hostBlob = SSHPublicKey.ed25519(Array(host.publicKey.rawRepresentation)).blob
        let constraint = SSHDestinationConstraint(
            from: SSHDestinationHop(user: "", host: "", keys: []), to: SSHDestinationHop(user: "alice", host: "server", keys: [(hostBlob, false)]))
        let contents = SSHDestinationConstraint.contents(of: [constraint])
        #expect(try SSHDestinationConstraint.list(from: contents) == [constraint])
        #expect(rig.answer(.addIdentity(key, comment: "restricted", constraints: [.restrictDestination(contents)])) == .success)
        // A key without constraints goes everywhere, bound or not.
        let free = Self.ed25519()
        #expect(rig.answer(.addIdentity(free, comment: "free", constraints: [])) == .success)

        let session = Array(repeating: UInt8(7), count: 32)
        let login = Self.login(user: "alice", sessionID: session, key: key.publicKey, hostKey: hostBlob)
        // Unbound (a local program): listed, but it signs nothing.
        #expect(rig.listed == ["restricted", "free"])
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: login, flags: 0)) == .failure)

        // A binding whose signature is not the host's is refused.
        let forged = SSHAgentRequest.sessionBind(hostKey: hostBlob, sessionID: session, signature: try Self.ed25519().signature(of: session), forwarding: false)
        #expect(rig.answer(forged) == .failure)
        #expect(rig.answer(try Self.bind(host, sessionID: session)) == .success)
        #expect(rig.listed == ["restricted", "free"])
        let signed = try #require(Self.signature(rig.answer(.sign(key: key.publicKey.blob, data: login, flags: 0))))
        #expect(key.publicKey.verifies(signed, of: login))
        // Another user, another session, something that is not a login: refused.
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: Self.login(user: "root", sessionID: session, key: key.publicKey, hostKey: hostBlob), flags: 0)) == .failure)
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: Self.login(user: "alice", sessionID: [1, 2, 3], key: key.publicKey, hostKey: hostBlob), flags: 0)) == .failure)
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: [1, 2, 3], flags: 0)) == .failure)
        // Nothing is bound after a session bound to log in.
        #expect(rig.answer(try Self.bind(host, sessionID: Array(repeating: 8, count: 32))) == .failure)

        // On a connection to another host, the key is neither listed nor used.
        rig.connection = SSHAgentConnection(peer: rig.connection.peer)
        let other = Array(repeating: UInt8(9), count: 32)
        #expect(rig.answer(try Self.bind(stranger, sessionID: other)) == .success)
        #expect(rig.listed == ["free"])
        let strangerBlob = SSHPublicKey.ed25519(Array(stranger.publicKey.rawRepresentation)).blob
        #expect(rig.answer(.sign(key: key.publicKey.blob, data: Self.login(user: "alice", sessionID: other, key: key.publicKey, hostKey: strangerBlob), flags: 0)) == .failure)
    }

    @Test func tokenKeysTaggedForSSHAreListedUsedAndKeptByRemoveAll() throws {
        let rig = try Rig()
        var create = ItemQuery(itemClass: .key)
        create.attributes["agrp"] = .string(SSHKeyStore.group)
        create.attributes["atag"] = .data(SSHKeyStore.tokenKeyTag)
        create.attributes["labl"] = .string("in the token")
        create.attributes["tkid"] = .string(TokenKeys.secureEnclave)
        guard case .key(let made) = try rig.engine.tokenKey(.create(create), caller: AccessPolicy(groups: [SSHKeyStore.group])) else {
            throw TestProcessError("a token key creation answered something else")
        }
        let point = try #require(made.tokenPublicKey)
        // Not for SSH: a token key without the tag, and a password of another group.
        var untagged = create
        untagged.attributes["atag"] = .data(Data("other".utf8))
        untagged.attributes["labl"] = .string("not for ssh")
        _ = try rig.engine.tokenKey(.create(untagged), caller: AccessPolicy(groups: [SSHKeyStore.group]))
        var password = ItemQuery(itemClass: .genericPassword)
        password.attributes["agrp"] = .string("mail")
        password.attributes["svce"] = .string("ssh-key")
        password.valueData = Data("secret".utf8)
        _ = try rig.engine.add(password, caller: AccessPolicy(groups: ["mail"]))

        let imported = Self.ed25519()
        #expect(rig.answer(.addIdentity(imported, comment: "imported", constraints: [])) == .success)
        #expect(rig.listed == ["imported", "in the token"])
        let publicKey = SSHPublicKey.ecdsaP256(point: Array(point))
        let signed = try #require(Self.signature(rig.answer(.sign(key: publicKey.blob, data: [5, 6], flags: 0))))
        #expect(publicKey.verifies(signed, of: [5, 6]))

        #expect(rig.answer(.removeAllIdentities) == .success)
        #expect(rig.listed == ["in the token"])
        #expect(rig.answer(.removeIdentity(key: publicKey.blob)) == .failure)
        #expect(try rig.engine.find(password, caller: AccessPolicy(groups: ["mail"])).count == 1)
    }
}
