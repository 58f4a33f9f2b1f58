import Foundation
import KeychainCore
import KeychainDBus
import KeychainSecretServiceClient

/// The methods of `org.freedesktop.Secret.Service`, `.Collection`, `.Item`, `.Session` and `.Prompt`.
extension SecretServiceProvider {
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let sessionInterface = "org.freedesktop.Secret.Session"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    /// The path that means "no object" (no prompt needed, no collection).
    static let none = DBusValue.objectPath("/")

    // MARK: Service

    func serviceMethod(_ call: DBusMethodCall, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        guard on(call, Self.serviceInterface) else { throw unknownMethod(call) }
        switch call.member {
        case "OpenSession":
            try expect(call, "sv")
            guard case .string(let name) = call.arguments[0], case .variant(let input) = call.arguments[1] else { throw .invalid("OpenSession takes an algorithm and a variant.") }
            guard let algorithm = SecretTransferAlgorithm(rawValue: name) else {
                throw SecretServiceError(name: SecretServiceError.notSupported, message: "Algorithm '\(name)' is not supported; use plain or dh-ietf1024-sha256-aes128-cbc-pkcs7.")
            }
            let bytes: [UInt8]?
            switch algorithm {
            case .plain:
                guard case .string = input else { throw .invalid("The plain algorithm takes an empty string as input.") }
                bytes = nil
            case .dhIETF1024SHA256AES128CBCPKCS7:
                guard let given = SecretValues.bytes(input) else { throw .invalid("dh-ietf1024-sha256-aes128-cbc-pkcs7 takes the client's public key as bytes (ay).") }
                bytes = given
            }
            let (crypto, output): (SecretSessionCrypto, [UInt8])
            do {
                (crypto, output) = try SecretSessionCrypto.open(algorithm: algorithm, input: bytes)
            } catch {
                throw SecretServiceError(name: error.dbusErrorName, message: error.message)
            }
            guard let id = sessions.open(owner: call.sender, crypto: crypto) else {
                throw SecretServiceError(name: SecretServiceError.limitsExceeded, message: "Too many open sessions for this connection; close some with Session.Close.")
            }
            let outputValue: DBusValue = algorithm == .plain ? .string("") : SecretValues.byteArray(output)
            return [.variant(outputValue), .objectPath(SecretObjectPath.session(id).path)]
        case "CreateCollection":
            try expect(call, "a{sv}s")
            guard let properties = SecretValues.propertyDictionary(call.arguments[0]), case .string(let alias) = call.arguments[1] else {
                throw .invalid("CreateCollection takes properties (a{sv}) and an alias (s).")
            }
            let label = properties["org.freedesktop.Secret.Collection.Label"]?.string ?? "Untitled"
            let collection = try createCollection(label: label, alias: alias, caller: caller)
            return [.objectPath(collection.path), Self.none]
        case "SearchItems":
            try expect(call, "a{ss}")
            guard let attributes = SecretValues.stringDictionary(call.arguments[0]) else { throw .invalid("SearchItems takes attributes (a{ss}).") }
            var unlocked: [String] = [], locked: [String] = []
            for collection in try visibleCollections(caller) {
                let found = try keychain { () throws(KeychainError) in try store.itemIDs(in: collection, matching: attributes) }
                    .map { SecretObjectPath.item(collection.id, $0) }
                if try isUnlocked(collection, for: caller) { unlocked += found } else { locked += found }
            }
            return [SecretValues.paths(unlocked), SecretValues.paths(locked)]
        case "Unlock":
            try expect(call, "ao")
            guard let paths = SecretValues.paths(call.arguments[0]) else { throw .invalid("Unlock takes object paths (ao).") }
            return try unlock(paths, caller: caller)
        case "Lock":
            try expect(call, "ao")
            guard let paths = SecretValues.paths(call.arguments[0]) else { throw .invalid("Lock takes object paths (ao).") }
            return try lock(paths, caller: caller)
        case "GetSecrets":
            try expect(call, "aoo")
            guard let paths = SecretValues.paths(call.arguments[0]), case .objectPath(let sessionPath) = call.arguments[1] else {
                throw .invalid("GetSecrets takes item paths (ao) and a session (o).")
            }
            let session = try session(sessionPath, caller: call.sender)
            var entries: [DBusValue] = []
            for path in paths {
                guard case .item(let name, let id)? = SecretObjectPath(path), let collection = try visibleCollection(name, caller: caller),
                    try isUnlocked(collection, for: caller)
                else { continue }
                let secret: (value: Data, contentType: String)
                do {
                    secret = try store.secret(of: id, in: collection)
                } catch {
                    // Gone meanwhile, or unreadable (damaged): left out of the answer, as the spec has it, and logged.
                    if error.code != .itemNotFound {
                        logger.error("a Secret Service item's secret could not be read", metadata: ["item": "\(path)", "status": "\(error.status.rawValue)"])
                    }
                    continue
                }
                entries.append(.dictEntry(.objectPath(path), try encode(secret.value, contentType: secret.contentType, session: session, path: sessionPath)))
            }
            return [.array(elementSignature: "{o(oayays)}", entries)]
        case "ReadAlias":
            try expect(call, "s")
            guard case .string(let alias) = call.arguments[0] else { throw .invalid("ReadAlias takes a name (s).") }
            guard SecretObjectPath.isElement(alias), let collection = try visibleCollection(.alias(alias), caller: caller) else { return [Self.none] }
            return [.objectPath(collection.path)]
        case "SetAlias":
            try expect(call, "so")
            guard case .string(let alias) = call.arguments[0], case .objectPath(let path) = call.arguments[1] else { throw .invalid("SetAlias takes a name (s) and a collection (o).") }
            guard SecretObjectPath.isElement(alias) else { throw .invalid("An alias is 1 to 255 of A-Z, a-z, 0-9 and _.") }
            if let current = try visibleCollection(.alias(alias), caller: caller) { try requireUnlocked(current, for: caller) }
            if path == "/" {
                try keychain { () throws(KeychainError) in try store.setAlias(alias, to: nil) }
                return []
            }
            guard case .collection(let name)? = SecretObjectPath(path), let target = try visibleCollection(name, caller: caller) else { throw .noObject(path) }
            try requireUnlocked(target, for: caller)
            try keychain { () throws(KeychainError) in try store.setAlias(alias, to: target.id) }
            return []
        default:
            throw unknownMethod(call)
        }
    }

    func createCollection(label: String, alias: String, caller: SecretServiceCaller) throws(SecretServiceError) -> SecretCollection {
        if !alias.isEmpty {
            guard SecretObjectPath.isElement(alias) else { throw .invalid("An alias is 1 to 255 of A-Z, a-z, 0-9 and _.") }
            if let existing = try visibleCollection(.alias(alias), caller: caller) { return existing }
        }
        var group: String?
        if let registered = caller.registeredGroups?.first(where: { $0 != "*" }) {
            group = registered
        } else if access.policy(for: caller.session.engine) == .deny {
            throw SecretServiceError(
                name: SecretServiceError.accessDenied,
                message:
                    "Programs that are not registered may not create collections here (\(UnregisteredCallerPolicy.environmentVariable)=deny). Register \(caller.description) with `security app add`.")
        }
        let collection = try keychain { () throws(KeychainError) in
            let made = try store.createCollection(label: label, group: group)
            if !alias.isEmpty { try store.setAlias(alias, to: made.id) }
            return made
        }
        access.grantOnce(caller, collection)
        signal(SecretObjectPath.root, Self.serviceInterface, "CollectionCreated", [.objectPath(collection.path)])
        return collection
    }

    /// The collections of `paths` (collections or items) the caller may see.
    private func collections(of paths: [String], caller: SecretServiceCaller) throws(SecretServiceError) -> [(String, SecretCollection)] {
        var out: [(String, SecretCollection)] = []
        for path in paths {
            switch SecretObjectPath(path) {
            case .collection(let name)?, .item(let name, _)?:
                if let collection = try visibleCollection(name, caller: caller) { out.append((path, collection)) }
            default: continue
            }
        }
        return out
    }

    func unlock(_ paths: [String], caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        var unlocked: [String] = []
        var waiting: [(String, SecretCollection)] = []
        for (path, collection) in try collections(of: paths, caller: caller) {
            if try isUnlocked(collection, for: caller) { unlocked.append(path) } else { waiting.append((path, collection)) }
        }
        guard !waiting.isEmpty else { return [SecretValues.paths(unlocked), Self.none] }
        for (_, collection) in waiting {
            if let refusal = access.refusal(caller, collection) { throw SecretServiceError(name: SecretServiceError.accessDenied, message: refusal) }
        }
        let engine = store.engine
        // With no pinentry, a passcode still lets the person answer from a terminal (`security approve`, in the
        // prompt's action); without one nobody can be asked at all.
        guard access.canPrompt(caller) || engine.lockState != .noPasscode else {
            let locked = waiting.map(\.1).filter { store.isLockedByClient($0.id) }
            let also = locked.isEmpty ? "" : " To open \(SecretServiceAccess.describe(locked)), locked by a client, run `security unlock-keychain`."
            throw SecretServiceError(
                name: SecretServiceError.accessDenied,
                message:
                    "\(caller.description) needs the person's permission, and no prompt can be shown here (no pinentry). Register the program with `security app add`, set \(UnregisteredCallerPolicy.environmentVariable)=allow, or install pinentry; or set a passcode with `security set-keychain-password`, then such requests wait for `security approve` in a terminal of yours.\(also)"
            )
        }
        let pending = waiting
        guard
            let id = prompts.add(
                owner: caller.busName, dismissedResult: SecretValues.paths([]),
                action: { [self] in unlockAction(pending, caller: caller) })
        else {
            throw SecretServiceError(name: SecretServiceError.limitsExceeded, message: "Too many prompts waiting for this connection; complete or dismiss them first.")
        }
        return [SecretValues.paths(unlocked), .objectPath(SecretObjectPath.prompt(id).path)]
    }

    /// What an Unlock's prompt does when the client runs it (on a worker thread: it blocks on the person):
    /// 1. a locked keychain asks the passcode (or, with no prompt possible, waits for `security approve`, whose
    ///    passcode unlocks it), which opens every collection;
    /// 2. a collection a client locked (``SecretStore/lockCollections(_:)``) needs the person's consent: the
    ///    access prompt when the caller is to be asked anyway, else a confirmation of its own;
    /// 3. each collection the caller may not use yet is asked about (``SecretServiceAccess/ask(_:_:)``).
    /// Returns the paths opened, or nil when none was (the refusal is recorded for the next IsLocked).
    func unlockAction(_ pending: [(String, SecretCollection)], caller: SecretServiceCaller) -> DBusValue? {
        let engine = store.engine
        let prompter = access.prompters.prompter(for: engine.location)
        if engine.lockState == .locked || engine.lockState == .beforeFirstUnlock {
            let passcode: Data
            switch prompter.askSecret(
                PromptText(
                    title: "Unlock the keychain", description: "\(caller.description) wants to use the keychain's Secret Service collections.", prompt: "Passcode:"))
            {
            case .answered(let given): passcode = given
            case .cancelled, .timedOut:
                access.recordRefusal(caller, "The unlock prompt was cancelled or not answered in time.")
                return nil
            case .unavailable(let why):
                // Nowhere to ask here: the person answers from a terminal (`security approve`), whose
                // passcode prompt also unlocks the keychain.
                do throws(KeychainError) {
                    try access.waitForApproval(caller, pending.map(\.1), reason: "the unlock prompt could not be shown: \(why)")
                } catch {
                    logger.notice("Secret Service unlock not approved", metadata: ["program": "\(caller.description)", "reason": "\(error.message)"])
                    access.recordRefusal(caller, error.message)
                    return nil
                }
                return SecretValues.paths(pending.map(\.0))
            }
            guard let text = String(data: passcode, encoding: .utf8) else {
                access.recordRefusal(caller, "The passcode given at the unlock prompt is not UTF-8 text.")
                return nil
            }
            do throws(KeychainError) { try engine.unlock(passcode: text) } catch {
                logger.notice("unlock from a Secret Service prompt failed", metadata: ["status": "\(error.status.rawValue)"])
                access.recordRefusal(caller, "The keychain was not unlocked: \(error.message)")
                return nil
            }
        }
        // Locked by a client, and the caller may use them without being asked: confirmed on their own.
        var confirm: [SecretCollection] = []
        for (_, collection) in pending where store.isLockedByClient(collection.id) {
            if (try? access.isGranted(caller, collection)) == true { confirm.append(collection) }
        }
        if !confirm.isEmpty {
            do throws(KeychainError) {
                try confirmUnlock(confirm, caller: caller, prompter: prompter)
                store.unlockCollections(confirm.map(\.id))
            } catch {
                logger.notice("Secret Service unlock refused", metadata: ["program": "\(caller.description)", "reason": "\(error.message)"])
                access.recordRefusal(caller, error.message)
                return nil
            }
        }
        var done: [String] = []
        for (path, collection) in pending {
            do throws(KeychainError) {
                try access.ask(caller, collection)
                // The person allowed the caller in: that opens a collection a client locked as well.
                store.unlockCollections([collection.id])
                done.append(path)
            } catch {
                logger.notice("Secret Service access refused", metadata: ["program": "\(caller.description)", "collection": "\(collection.id)", "reason": "\(error.message)"])
                access.recordRefusal(caller, error.message)
            }
        }
        for (_, collection) in pending where !store.isLockedByClient(collection.id) {
            signal(SecretObjectPath.root, Self.serviceInterface, "CollectionChanged", [.objectPath(collection.path)])
        }
        return done.isEmpty ? nil : SecretValues.paths(done)
    }

    /// Asks the person to confirm opening `collections`, locked by a client: with a passcode set, by giving it
    /// (checked, not unlocking anything); without one, Allow or Deny. No prompt possible: `security approve`.
    private func confirmUnlock(_ collections: [SecretCollection], caller: SecretServiceCaller, prompter: any PresencePrompter) throws(KeychainError) {
        let engine = store.engine
        let text = "\(caller.description) wants to unlock \(SecretServiceAccess.describe(collections)), which was locked."
        if engine.lockState == .noPasscode {
            switch prompter.confirm(PromptText(title: "Unlock the collection?", description: text)) {
            case .answered(true): return
            case .answered(false): throw KeychainError(code: .authenticationFailed, message: "The person refused to unlock \(SecretServiceAccess.describe(collections)).")
            case .cancelled, .timedOut: throw KeychainError(code: .userCanceled, message: "The unlock prompt was cancelled or not answered in time.")
            case .unavailable(let why): try access.waitForApproval(caller, collections, reason: "the unlock prompt could not be shown: \(why)")
            }
            return
        }
        switch prompter.askSecret(PromptText(title: "Unlock the collection", description: text, prompt: "Passcode:")) {
        case .answered(let given):
            guard let passcode = String(data: given, encoding: .utf8) else {
                throw KeychainError(code: .authenticationFailed, message: "The passcode given at the unlock prompt is not UTF-8 text.")
            }
            try engine.verifyPasscode(passcode)
        case .cancelled, .timedOut: throw KeychainError(code: .userCanceled, message: "The unlock prompt was cancelled or not answered in time.")
        case .unavailable(let why): try access.waitForApproval(caller, collections, reason: "the unlock prompt could not be shown: \(why)")
        }
    }

    /// `Lock`: with a passcode, locks the keychain (what `security lock-keychain` does: the WhenUnlocked keys go);
    /// without one, locks the collections named for every caller until an Unlock the person confirms. Either way
    /// the caller's one-time permissions for them end.
    func lock(_ paths: [String], caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        let found = try collections(of: paths, caller: caller)
        access.revokeOnce(caller, Set(found.map(\.1.id)))
        switch store.engine.lockState {
        case .unlocked: store.engine.lock()
        case .noPasscode: store.lockCollections(found.map(\.1.id))
        case .locked, .beforeFirstUnlock: break
        }
        var locked: [String] = []
        for (path, collection) in found where try !isUnlocked(collection, for: caller) { locked.append(path) }
        for collection in Set(found.map(\.1.path)) {
            signal(SecretObjectPath.root, Self.serviceInterface, "CollectionChanged", [.objectPath(collection)])
        }
        return [SecretValues.paths(locked), Self.none]
    }

    // MARK: Sessions and secrets

    func session(_ path: String, caller: String) throws(SecretServiceError) -> SecretSessionCrypto {
        guard case .session(let id)? = SecretObjectPath(path), let session = sessions.session(id, caller: caller) else {
            throw SecretServiceError(name: SecretServiceError.noSession, message: "No session \(path) for this connection. Open one with OpenSession.")
        }
        return session
    }

    func encode(_ secret: Data, contentType: String, session: SecretSessionCrypto, path: String) throws(SecretServiceError) -> DBusValue {
        do {
            let (parameters, value) = try session.seal(Array(secret))
            return SecretValues.Secret(session: path, parameters: parameters, value: value, contentType: contentType).encoded
        } catch {
            throw SecretServiceError(name: error.dbusErrorName, message: error.message)
        }
    }

    func decode(_ value: DBusValue, caller: String) throws(SecretServiceError) -> (Data, String) {
        guard let secret = SecretValues.Secret(value) else { throw .invalid("A secret is (oayays): session, parameters, value, content type.") }
        let session = try session(secret.session, caller: caller)
        do {
            return (Data(try session.open(parameters: secret.parameters, value: secret.value)), secret.contentType)
        } catch {
            throw SecretServiceError(name: error.dbusErrorName, message: error.message)
        }
    }

    func sessionMethod(_ call: DBusMethodCall, id: String, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        guard on(call, Self.sessionInterface), call.member == "Close" else { throw unknownMethod(call) }
        try expect(call, "")
        guard sessions.close(id, caller: call.sender) else { throw .noObject(call.path) }
        return []
    }

    // MARK: Prompts

    func promptMethod(_ call: DBusMethodCall, id: String, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        guard on(call, Self.promptInterface) else { throw unknownMethod(call) }
        switch call.member {
        case "Prompt":
            try expect(call, "s")
            guard let (action, dismissedResult) = prompts.start(id, caller: call.sender) else { throw .noObject(call.path) }
            let path = call.path
            DispatchQueue.global().async { [self] in
                let result = action()
                // Dismissed meanwhile (Dismiss, or the client left): nothing more to say.
                guard prompts.remove(id) != nil else { return }
                signal(path, Self.promptInterface, "Completed", [.bool(result == nil), .variant(result ?? dismissedResult)])
            }
            return []
        case "Dismiss":
            try expect(call, "")
            guard let dismissedResult = prompts.remove(id, caller: call.sender) else { throw .noObject(call.path) }
            signal(call.path, Self.promptInterface, "Completed", [.bool(true), .variant(dismissedResult)])
            return []
        default:
            throw unknownMethod(call)
        }
    }

    // MARK: Collection

    func collectionMethod(_ call: DBusMethodCall, name: SecretObjectPath.CollectionName, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        guard on(call, Self.collectionInterface) else { throw unknownMethod(call) }
        guard let collection = try visibleCollection(name, caller: caller) else { throw .noObject(call.path) }
        switch call.member {
        case "Delete":
            try expect(call, "")
            try requireUnlocked(collection, for: caller)
            _ = try keychain { () throws(KeychainError) in try store.deleteCollection(collection) }
            signal(SecretObjectPath.root, Self.serviceInterface, "CollectionDeleted", [.objectPath(collection.path)])
            return [Self.none]
        case "SearchItems":
            try expect(call, "a{ss}")
            guard let attributes = SecretValues.stringDictionary(call.arguments[0]) else { throw .invalid("SearchItems takes attributes (a{ss}).") }
            let found = try keychain { () throws(KeychainError) in try store.itemIDs(in: collection, matching: attributes) }
            return [SecretValues.paths(found.map { SecretObjectPath.item(collection.id, $0) })]
        case "CreateItem":
            try expect(call, "a{sv}(oayays)b")
            guard let properties = SecretValues.propertyDictionary(call.arguments[0]), case .bool(let replace) = call.arguments[2] else {
                throw .invalid("CreateItem takes properties (a{sv}), a secret ((oayays)) and replace (b).")
            }
            try requireUnlocked(collection, for: caller)
            let label = properties["org.freedesktop.Secret.Item.Label"]?.string ?? ""
            var attributes: [String: String] = [:]
            if let given = properties["org.freedesktop.Secret.Item.Attributes"] {
                guard let parsed = SecretValues.stringDictionary(given) else { throw .invalid("org.freedesktop.Secret.Item.Attributes is a{ss}.") }
                attributes = parsed
            }
            let (secret, contentType) = try decode(call.arguments[1], caller: call.sender)
            // ItemCreated or ItemChanged is told by the engine's change observer (see itemChanges(_:)).
            let (item, _) = try keychain { () throws(KeychainError) in
                try store.createItem(
                    in: collection, label: label, attributes: attributes, secret: secret,
                    contentType: contentType, replace: replace)
            }
            return [.objectPath(item.path), Self.none]
        default:
            throw unknownMethod(call)
        }
    }

    // MARK: Item

    func itemMethod(
        _ call: DBusMethodCall, collection name: SecretObjectPath.CollectionName, item id: String,
        caller: SecretServiceCaller
    ) throws(SecretServiceError) -> [DBusValue] {
        guard on(call, Self.itemInterface) else { throw unknownMethod(call) }
        guard let collection = try visibleCollection(name, caller: caller) else { throw .noObject(call.path) }
        // Each method finds the item itself (one engine call, not a look first): a missing one is NoSuchObject.
        func onItem<T>(_ body: () throws(KeychainError) -> T) throws(SecretServiceError) -> T {
            do {
                return try body()
            } catch  where error.code == .itemNotFound {
                throw .noObject(call.path)
            } catch {
                throw SecretServiceError(error)
            }
        }
        switch call.member {
        case "Delete":
            try expect(call, "")
            try requireUnlocked(collection, for: caller)
            try onItem { () throws(KeychainError) in try store.deleteItem(id, in: collection) }
            return [Self.none]
        case "GetSecret":
            try expect(call, "o")
            guard case .objectPath(let sessionPath) = call.arguments[0] else { throw .invalid("GetSecret takes a session (o).") }
            let session = try session(sessionPath, caller: call.sender)
            try requireUnlocked(collection, for: caller)
            let secret = try onItem { () throws(KeychainError) in try store.secret(of: id, in: collection) }
            return [try encode(secret.value, contentType: secret.contentType, session: session, path: sessionPath)]
        case "SetSecret":
            try expect(call, "(oayays)")
            try requireUnlocked(collection, for: caller)
            let (secret, contentType) = try decode(call.arguments[0], caller: call.sender)
            try onItem { () throws(KeychainError) in try store.setSecret(secret, contentType: contentType, of: id, in: collection) }
            return []
        default:
            guard try keychain({ () throws(KeychainError) in try store.item(id, in: collection) }) != nil else { throw .noObject(call.path) }
            throw unknownMethod(call)
        }
    }
}
