import Foundation
import KeychainTestSupport
import Testing
import KeychainClient
import KeychainProtocol
@testable import KeychainCore

/// Prompts answered by a scripted pinentry (``PinentryScript``) named in one keychain's settings, so keychaind and
/// the test process (in-process mode) start the same program.
final class ScriptedPrompts: @unchecked Sendable {
    let pinentry: PinentryScript
    var logPath: String { pinentry.logPath }

    init(_ keychain: TestKeychain, timeout: Int? = nil) throws {
        pinentry = try PinentryScript()
        try KeychainSettings(pinentryProgram: pinentry.program, promptTimeout: timeout).save(keychain.engine.location)
    }

    /// Queues answers, one line per prompt to come.
    func queue(_ lines: String...) throws {
        for line in lines { try pinentry.queue(line) }
    }

    /// Everything the pinentry received, every start included.
    var log: String { pinentry.log }
    /// How many pinentries were started.
    var starts: Int { pinentry.starts }
}

extension TestKeychain {
    /// A connection acting as this keychain's caller: the engine here, or keychaind.
    func connection(groups: [String]? = nil) -> any KeychainConnection {
        let policy = groups.map(AccessPolicy.init(groups:)) ?? caller
        if let daemon {
            return DaemonKeychain(client: daemon.client, claim: policy.unrestricted ? policy.groups + ["*"] : policy.groups)
        }
        return InProcessKeychain(engine: engine, caller: policy)
    }
}

/// A generic password protected by `flags`.
func protectedPassword(_ account: String, flags: AccessControlFlags, label: String = "bank", secret: String? = nil) throws -> ItemQuery {
    var q = ItemQuery(itemClass: .genericPassword)
    let control = try AccessControl(protection: .whenUnlocked, flags: flags)
    q.attributes = [
        "acct": .string(account), "svce": .string("presence"), "labl": .string(label),
        "accc": .data(control.encoded), "pdmn": .string(control.protection.rawValue),
    ]
    q.valueData = Data((secret ?? "secret-\(account)").utf8)
    return q
}

/// A query for one item's data.
func dataQuery(_ account: String, ui: AuthenticationUI = .allow, context: AuthenticationContextID? = nil, reuse: TimeInterval = 0) -> ItemQuery {
    var q = ItemQuery(itemClass: .genericPassword)
    q.attributes = ["acct": .string(account), "svce": .string("presence")]
    q.returns.data = true
    q.authentication.ui = ui
    q.authentication.context = context
    q.authentication.reuseDuration = reuse
    return q
}

/// User presence, end to end: a protected item's secret is released only after the scripted pinentry answers, in
/// the engine opened here and through a real keychaind, and never by any other request shape.
@Suite(.enabled(if: settingsMayNameATestPinentry, "a keychain setting names only a pinentry only root can change: the scripted one is, only when the tests run as root"))
struct PresenceTests {
    @Test(arguments: Backend.allCases)
    func aConfirmationReleasesTheSecretAndACancelDoesNot(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("a", flags: .devicePasscode))
        try prompts.queue("cancel", "confirm")
        expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.find(dataQuery("a")) }
        #expect(prompts.starts == 1)
        #expect(try connection.find(dataQuery("a")).first?.data == Data("secret-a".utf8))
        #expect(prompts.starts == 2)
        // Attributes need no prompt, as on Apple's systems.
        var attributes = dataQuery("a", ui: .fail)
        attributes.returns = ReturnOptions(attributes: true)
        #expect(try connection.find(attributes).first?.attributes["labl"] == .string("bank"))
        #expect(prompts.starts == 2)
        // The prompt names the item; through keychaind it names the program as keychaind identified it.
        #expect(prompts.log.contains("SETDESC"))
        #expect(prompts.log.contains("bank"))
        if backend == .daemon {
            let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            #expect(prompts.log.contains(exe.replacingOccurrences(of: "%", with: "%25")))
        }
    }

    @Test(arguments: Backend.allCases)
    func aWrongPasscodeFailsAndCountsInTheThrottle(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        try kc.engine.changePasscode(from: nil, to: "1234")
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("p", flags: .devicePasscode))
        try prompts.queue("pin 0000", "pin 1234")
        expectKeychainError(.authenticationFailed, status: .authFailed) { _ = try connection.find(dataQuery("p")) }
        let keybag = try Data(contentsOf: URL(fileURLWithPath: kc.engine.location.keybagPath))
        #expect(try Keybag.throttle(in: [UInt8](keybag), deviceKey: kc.engine.deviceKey())?.failures == 1)
        #expect(try connection.find(dataQuery("p")).first?.data == Data("secret-p".utf8))
        #expect(prompts.log.contains("GETPIN"))
    }

    @Test(arguments: Backend.allCases)
    func failNeverStartsAPromptAndSkipLeavesOutExactlyTheProtectedItems(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("p1", flags: .devicePasscode))
        _ = try connection.add(protectedPassword("p2", flags: .userPresence))
        for plain in ["o1", "o2"] {
            var q = ItemQuery(itemClass: .genericPassword)
            q.attributes = ["acct": .string(plain), "svce": .string("presence")]
            q.valueData = Data(plain.utf8)
            _ = try connection.add(q)
        }
        try prompts.queue("confirm")
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.find(dataQuery("p1", ui: .fail)) }
        var all = ItemQuery(itemClass: .genericPassword)
        all.attributes = ["svce": .string("presence")]
        all.limit = .all
        all.returns = ReturnOptions(data: true, attributes: true)
        all.authentication.ui = .skip
        let found = try connection.find(all)
        #expect(Set(found.compactMap { $0.attributes["acct"]?.stringValue }) == ["o1", "o2"])
        // A context that forbids interaction is as kSecUseAuthenticationUIFail.
        var quiet = dataQuery("p2")
        quiet.authentication.interactionNotAllowed = true
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.find(quiet) }
        #expect(prompts.starts == 0)
        #expect(!FileManager.default.fileExists(atPath: prompts.logPath))
    }

    @Test(arguments: Backend.allCases)
    func aContextIsReusedByItsProgramUntilALock(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("r", flags: .devicePasscode))
        _ = try connection.add(protectedPassword("s", flags: .devicePasscode))
        try prompts.queue("confirm", "confirm", "confirm")
        let context = AuthenticationContextID.random()
        #expect(try connection.find(dataQuery("r", context: context, reuse: 60)).first?.data == Data("secret-r".utf8))
        #expect(try connection.find(dataQuery("s", context: context, reuse: 60)).first?.data == Data("secret-s".utf8))
        #expect(try connection.find(dataQuery("r", ui: .fail, context: context, reuse: 60)).first?.data == Data("secret-r".utf8))
        #expect(prompts.starts == 1)
        // Without the context, the same program is asked again.
        _ = try connection.find(dataQuery("r"))
        #expect(prompts.starts == 2)
        // A lock ends every proof.
        try connection.lock()
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            _ = try connection.find(dataQuery("r", ui: .fail, context: context, reuse: 60))
        }
        // Invalidating the context ends its proofs too.
        _ = try connection.find(dataQuery("r", context: context, reuse: 60))
        #expect(prompts.starts == 3)
        try connection.invalidate(context: context)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            _ = try connection.find(dataQuery("r", ui: .fail, context: context, reuse: 60))
        }
    }

    /// The attack: another program that learns a context's identifier (here it is simply told) gains nothing: its
    /// request is asked for again.
    @Test func aContextsProofIsNotAnotherProgramsThroughKeychaind() throws {
        let kc = try TestKeychain(.daemon)
        let prompts = try ScriptedPrompts(kc)
        let helper = try BuiltProducts.path(of: "keychain-test-helper")
        try registerProgram(kc.engine, path: helper, groups: ["com.example.app"])
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("h", flags: .devicePasscode))
        try prompts.queue("confirm", "cancel")
        let context = AuthenticationContextID.random()
        _ = try connection.find(dataQuery("h", context: context, reuse: 60))
        #expect(prompts.starts == 1)
        var env = baseEnvironment(home: kc.home)
        env["KEYCHAIN_DAEMON_SOCKET"] = kc.daemon?.socketPath
        let hex = context.bytes.map { String(format: "%02x", $0) }.joined()
        let run = try runHelper(["find-in-context", "h", "presence", hex], environment: env)
        #expect(run.stdout.contains("status=-128"), "\(run.stdout) \(run.stderr)")
        #expect(!run.stdout.contains("data="))
        #expect(prompts.starts == 2)
        #expect(prompts.log.contains(helper.replacingOccurrences(of: "%", with: "%25")))
    }

    @Test(arguments: Backend.allCases)
    func aHungPromptIsStoppedAndTheRequestCancelled(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc, timeout: 1)
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("t", flags: .devicePasscode))
        try prompts.queue("hang")
        expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.find(dataQuery("t")) }
        let pid = prompts.log.components(separatedBy: "\n").first { $0.hasPrefix("--- start ") }
            .flatMap { Int32($0.dropFirst("--- start ".count)) }
        #expect(pid != nil)
        if let pid { #expect(kill(pid, 0) == -1 && errno == ESRCH, "the hung pinentry was stopped") }
    }

    @Test(arguments: Backend.allCases)
    func promptTextIsEscapedForAssuan(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        _ = try connection.add(protectedPassword("e", flags: .devicePasscode, label: "50% off\r\nBYE"))
        try prompts.queue("cancel")
        var q = dataQuery("e")
        q.authentication.operationPrompt = "Reason %0A\nGETPIN"
        expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.find(q) }
        let setdesc = prompts.log.components(separatedBy: "\n").first { $0.hasPrefix("SETDESC ") } ?? ""
        #expect(setdesc.contains("50%25 off%0D%0ABYE"))
        #expect(setdesc.contains("Reason %250A%0AGETPIN"))
        #expect(!prompts.log.components(separatedBy: "\n").contains("BYE") || prompts.log.components(separatedBy: "\n").filter { $0 == "BYE" }.count <= 1)
    }

    /// A protected secret comes out through no request shape without the proof.
    @Test(arguments: Backend.allCases)
    func noRequestShapeGivesAProtectedSecretWithoutTheProof(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        let stored = try connection.add(protectedPassword("x", flags: .devicePasscode))
        // By persistent reference.
        var byReference = ItemQuery(itemClass: .genericPassword)
        byReference.persistentRef = stored.persistentRef
        byReference.returns = ReturnOptions(data: true, attributes: true, persistentRef: true)
        byReference.authentication.ui = .fail
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.find(byReference) }
        // An update that would strip the access control, or replace the secret.
        var update = ItemQuery(itemClass: .genericPassword)
        update.attributes = ["acct": .string("x"), "svce": .string("presence")]
        update.authentication.ui = .fail
        let open = try AccessControl(protection: .whenUnlocked, flags: [])
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            try connection.update(update, with: ItemChanges(attributes: ["accc": .data(open.encoded), "pdmn": .string("ak")]))
        }
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            try connection.update(update, with: ItemChanges(data: Data("replaced".utf8)))
        }
        // A backup of the keychain (the plaintext inside it) needs the proof too; through keychaind only the
        // security tool may back up at all.
        if backend == .daemon {
            expectKeychainError(.missingEntitlement, status: .missingEntitlement) { _ = try connection.backup(password: "backup") }
        } else {
            try prompts.queue("cancel")
            expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.backup(password: "backup") }
        }
        // Nothing changed, and deleting needs no proof (Apple's ACL allows it).
        try prompts.queue("confirm")
        #expect(try connection.find(dataQuery("x")).first?.data == Data("secret-x".utf8))
        #expect(try connection.delete(dataQuery("x", ui: .fail)) == 1)
        // The secret is never on disk in the clear.
        let database = try Data(contentsOf: URL(fileURLWithPath: kc.engine.location.databasePath))
        #expect(database.range(of: Data("secret-x".utf8)) == nil)
    }

    /// The attack, on the wire: a hand-made find gets the requirement, never the secret; a hand-made authenticate
    /// that names the item with a harmless description still shows the item's real label.
    @Test func aHandMadeRequestGetsNoSecretAndCannotRelabelThePrompt() throws {
        let kc = try TestKeychain(.daemon)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        let stored = try connection.add(protectedPassword("w", flags: .devicePasscode, label: "payroll"))
        guard let client = kc.daemon?.client else { Issue.record("no daemon"); return }
        let error = try #require(
            expectKeychainError(.authenticationNeeded, status: .authNeeded) {
                try client.call(.find(dataQuery("w"), claim: ["com.example.app"]))
            })
        #expect(error.presenceNeeded.first?.item == stored.persistentRef)
        var forged = try #require(error.presenceNeeded.first)
        forged.itemDescription = "harmless"
        forged.accessControl = try AccessControl(protection: .whenUnlocked, flags: .watch)
        var options = AuthenticationOptions()
        options.context = .random()
        try prompts.queue("cancel")
        _ = try? client.call(.authenticate(forged, options))
        #expect(prompts.log.contains("payroll"))
        #expect(!prompts.log.contains("harmless"))
    }

    @Test(arguments: Backend.allCases)
    func anApplicationPasswordSealsTheSecret(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        var add = try protectedPassword("ap", flags: .applicationPassword)
        // Without the password, the add asks for it: here the pinentry gives it.
        try prompts.queue("pin hunter2")
        _ = try connection.add(add)
        #expect(prompts.starts == 1)
        var wrong = dataQuery("ap")
        wrong.authentication.applicationPassword = Data("hunter3".utf8)
        expectKeychainError(.authenticationFailed, status: .authFailed) { _ = try connection.find(wrong) }
        var right = dataQuery("ap")
        right.authentication.applicationPassword = Data("hunter2".utf8)
        #expect(try connection.find(right).first?.data == Data("secret-ap".utf8))
        // Given with the request, no prompt is needed.
        add.attributes["acct"] = .string("ap2")
        add.authentication.applicationPassword = Data("pw".utf8)
        _ = try connection.add(add)
        #expect(prompts.starts == 1)
        // An update cannot strip the password protection.
        var update = ItemQuery(itemClass: .genericPassword)
        update.attributes = ["acct": .string("ap"), "svce": .string("presence")]
        let open = try AccessControl(protection: .whenUnlocked, flags: [])
        expectKeychainError(.invalidParameter, status: .param) {
            try connection.update(update, with: ItemChanges(attributes: ["accc": .data(open.encoded), "pdmn": .string("ak")]))
        }
    }

    /// A key kept by the keychain with `.privateKeyUsage` signs only after presence; openssl verifies the signature.
    @Test(arguments: Backend.allCases)
    func aPrivateKeyUsageKeySignsOnlyAfterPresence(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        var create = ItemQuery(itemClass: .key)
        let control = try AccessControl(protection: .whenUnlockedThisDeviceOnly, flags: [.privateKeyUsage, .userPresence])
        create.attributes = [
            "tkid": .string("com.apple.setoken"), "labl": .string("signing key"),
            "accc": .data(control.encoded), "pdmn": .string(control.protection.rawValue),
        ]
        guard case .key(let key) = try connection.tokenKey(.create(create)), let publicKey = key.tokenPublicKey else {
            Issue.record("no key"); return
        }
        let message = Data("sign me".utf8)
        let sign = TokenKeyRequest.sign(reference: key.persistentRef, algorithm: "algid:sign:ECDSA:message-X962:SHA256", input: message)
        var fail = AuthenticationOptions()
        fail.ui = .fail
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.tokenKey(sign, authentication: fail) }
        try prompts.queue("cancel", "confirm")
        expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.tokenKey(sign) }
        guard case .data(let signature) = try connection.tokenKey(sign) else { Issue.record("no signature"); return }
        #expect(prompts.starts == 2)
        let bench = try Workbench()
        defer { bench.remove() }
        try bench.write("pub.der", spki(ecPoint: publicKey))
        try bench.write("message", message)
        try bench.write("signature", signature)
        let verified = try bench.openssl("dgst", "-sha256", "-verify", "pub.der", "-keyform", "DER", "-signature", "signature", "message")
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("Verified OK"))
    }
}
