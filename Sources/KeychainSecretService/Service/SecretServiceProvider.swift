import Dispatch
import Foundation
import KeychainCore
import KeychainDBus
import Logging
import Synchronization
import CKeychainLinux

/// The freedesktop Secret Service (`org.freedesktop.secrets`, specification 0.2) served from keychaind.
///
/// Calls arrive from ``DBusServerConnection`` (its bus thread parses them); each is answered on a worker thread,
/// after the caller was identified from the bus daemon's credentials for its connection (``SecretServiceAccess``),
/// except quick reads from a caller identified before, which the bus thread answers itself (``quickAnswer(_:)``).
/// Sessions and prompts belong to the connection that made them and end when it leaves the bus.
package final class SecretServiceProvider: Sendable {
    /// The well-known name.
    package static let busName = "org.freedesktop.secrets"

    let bus: DBusServerConnection
    let store: SecretStore
    let access: SecretServiceAccess
    let sessions = SecretSessions()
    let prompts = SecretPrompts()
    let logger: Logger
    /// The process ID and user ID the bus gave for each connection seen (a unique name is never reused).
    private let credentials = Mutex<[String: (pid: UInt32?, uid: UInt32?)]>([:])
    private let workers = DispatchQueue(label: "keychaind.secret-service", attributes: .concurrent)

    /// A provider answering on `bus` from `store`, deciding access with `access`.
    package init(bus: DBusServerConnection, store: SecretStore, access: SecretServiceAccess, logger: Logger) {
        self.bus = bus
        self.store = store
        self.access = access
        self.logger = logger
        store.keepIndexWhileLocked()
    }

    /// Reports item changes on the bus, whoever made them (a client here, SecItem or `security` through keychaind):
    /// `ItemCreated`, `ItemChanged` and `ItemDeleted` on the item's collection.
    func observeItemChanges() {
        let bus = self.bus
        store.session.observe { kind, item in
            let member =
                switch kind {
                case .added: "ItemCreated"
                case .updated: "ItemChanged"
                case .deleted: "ItemDeleted"
                }
            bus.emitSignal(
                path: SecretObjectPath.collection(item.collection), interface: Self.collectionInterface, member: member,
                [.objectPath(item.path)])
        }
        store.engine.observeChanges { changes in
            for change in changes where change.itemClass == .genericPassword {
                guard let service = change.attributes["svce"]?.stringValue, service.hasPrefix(SecretStore.itemServicePrefix),
                    let id = change.attributes["acct"]?.stringValue
                else { continue }
                let collection = String(service.dropFirst(SecretStore.itemServicePrefix.count))
                guard SecretObjectPath.isElement(collection), SecretObjectPath.isElement(id) else { continue }
                let member =
                    switch change.kind {
                    case .added: "ItemCreated"
                    case .updated: "ItemChanged"
                    case .deleted: "ItemDeleted"
                    }
                bus.emitSignal(
                    path: SecretObjectPath.collection(collection), interface: Self.collectionInterface, member: member,
                    [.objectPath(SecretObjectPath.item(collection, id))])
            }
        }
    }

    /// Why the provider could not take the name.
    package struct NameTaken: Error, CustomStringConvertible {
        /// The current owner's unique name, when the bus says.
        package var owner: String?
        /// What to do.
        package var description: String {
            "Another Secret Service provider\(owner.map { " (\($0))" } ?? "") owns org.freedesktop.secrets on this bus (gnome-keyring or KeePassXC?). Stop it, or start keychaind with --secret-service-replace to take the name over."
        }
    }

    /// Takes `org.freedesktop.secrets` (replacing its owner when `replace`, if the owner allows it); throws
    /// ``NameTaken`` when another provider keeps it.
    package func claimName(replace: Bool) async throws {
        let result = try await bus.requestName(Self.busName, replaceExisting: replace, allowReplacement: true)
        switch result {
        case .primaryOwner, .alreadyOwner:
            logger.info("serving the Secret Service", metadata: ["bus": "\(bus.address)"])
        case .exists:
            let owner = try? await bus.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus", member: "GetNameOwner", [.string(Self.busName)]
            ).first?.string
            throw NameTaken(owner: owner)
        }
    }

    /// Serves calls until the bus connection ends (or the task is cancelled).
    package func run() async {
        observeItemChanges()
        bus.answerOnBusThread { [self] call in quickAnswer(call) }
        defer { bus.answerOnBusThread(nil) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await change in bus.peerDepartures where change.newOwner.isEmpty {
                    forget(change.name)
                }
            }
            group.addTask { [self] in
                for await event in bus.events {
                    if case .nameLost(let name) = event, name == Self.busName {
                        logger.notice("another provider took org.freedesktop.secrets; no longer serving it")
                    }
                }
            }
            for await call in bus.calls {
                group.addTask { [self] in await serve(call) }
            }
            group.cancelAll()
        }
    }

    /// Forgets everything of a connection that left the bus.
    func forget(_ name: String) {
        let known = credentials.withLock({ $0.removeValue(forKey: name) }) != nil
        slowSenders.withLock { _ = $0.removeValue(forKey: name) }
        let closed = sessions.closeAll(owner: name)
        let dismissed = prompts.removeAll(owner: name)
        access.forget(busName: name)
        guard known || closed > 0 || dismissed > 0 else { return }
        logger.debug(
            "secret service client left the bus",
            metadata: [
                "client": "\(name)", "sessions closed": "\(closed)", "prompts dropped": "\(dismissed)",
                "sessions open": "\(sessions.count)", "prompts waiting": "\(prompts.count)",
            ])
    }

    /// The calls answered on the bus thread when their caller is known already: reads of the store and of memory,
    /// which never prompt, never write and never wait on the bus. (A hop to another thread and back costs more than
    /// the work of such a call.) Everything else, and a caller's first call, goes to a worker.
    static let quickMembers: Set<String> = [
        "org.freedesktop.Secret.Service.SearchItems", "org.freedesktop.Secret.Service.GetSecrets",
        "org.freedesktop.Secret.Service.ReadAlias", "org.freedesktop.Secret.Collection.SearchItems",
        "org.freedesktop.Secret.Item.GetSecret", "org.freedesktop.DBus.Properties.Get",
        "org.freedesktop.DBus.Properties.GetAll",
    ]

    /// The most attributes a search, or items a GetSecrets, answered on the bus thread may name: a bigger call
    /// (legal, but not what clients send) goes to a worker, so that one client cannot hold the bus thread, and with
    /// it every other client, for long.
    static let maximumQuickElements = 32

    /// Whether `call` is small enough for the bus thread: its arrays short, and not one of the reads whose cost
    /// grows with the collection (a search by no attribute, a collection's `Items`, `GetAll` of a collection).
    static func isSmall(_ call: DBusMethodCall) -> Bool {
        let shortArrays = call.arguments.allSatisfy { argument in
            if case .array(_, let elements) = argument { return elements.count <= maximumQuickElements }
            return true
        }
        guard shortArrays else { return false }
        switch call.member {
        case "SearchItems":
            if case .array(_, let attributes)? = call.arguments.first { return !attributes.isEmpty }
            return false
        case "Get":
            return call.arguments.count == 2 && call.arguments[1] != .string("Items")
        case "GetAll":
            return call.arguments.first != .string(collectionInterface)
        default:
            return true
        }
    }

    /// How long a call answered on the bus thread may take before its sender's next calls go to workers.
    static let slowQuickAnswer: Duration = .milliseconds(5)
    /// How long a sender whose call was slow is kept off the bus thread.
    static let slowSenderPenalty: Duration = .seconds(10)
    /// Senders kept off the bus thread, until when: a client whose searches match thousands of items (or that
    /// makes them so, writing between searches) would otherwise hold every other client up.
    private let slowSenders = Mutex<[String: ContinuousClock.Instant]>([:])

    /// `call` answered at once (on the bus thread), or nil to have it served by ``serve(_:)``: only one of
    /// ``quickMembers`` from a connection whose process was identified before and still checks out.
    func quickAnswer(_ call: DBusMethodCall) -> DBusInlineAnswer? {
        guard let interface = call.interface, Self.quickMembers.contains("\(interface).\(call.member)"),
            Self.isSmall(call), let known = credentials.withLock({ $0[call.sender] })
        else { return nil }
        let started = ContinuousClock.now
        let keptOff = slowSenders.withLock { slow -> Bool in
            guard let until = slow[call.sender] else { return false }
            if until > started { return true }
            slow[call.sender] = nil
            return false
        }
        guard !keptOff else { return nil }
        defer {
            if ContinuousClock.now - started > Self.slowQuickAnswer {
                slowSenders.withLock { slow in
                    if slow.count >= 4_096 { slow.removeAll() }
                    slow[call.sender] = started + Self.slowSenderPenalty
                }
                logger.debug(
                    "a slow call was answered on the bus thread; this client's next calls go to workers",
                    metadata: ["client": "\(call.sender)", "member": "\(call.member)"])
            }
        }
        let result: Result<[DBusValue], SecretServiceError>
        do throws(KeychainError) {
            guard let caller = try access.identifiedCaller(busName: call.sender, pid: known.pid) else { return nil }
            result = Result { () throws(SecretServiceError) in try dispatch(call, caller: caller) }
        } catch {
            result = .failure(SecretServiceError(error))
        }
        switch result {
        case .success(let values):
            releaseMemory(after: values)
            return .reply(values)
        case .failure(let error):
            logger.debug("secret service call failed", metadata: ["member": "\(call.member)", "error": "\(error.name)"])
            return .error(name: error.name, message: error.message)
        }
    }

    /// How many objects an answer names before the memory its making freed is given back to the kernel.
    static let largeAnswer = 1_000

    /// After an answer that named many items (a collection's `Items`, a search that matched most of a store): its
    /// making decoded every item and freed it again, and glibc keeps freed memory in the process. Given back at once,
    /// a listing of 10,000 items leaves keychaind about where it was instead of tens of MiB larger for good.
    func releaseMemory(after values: [DBusValue]) {
        if Self.objectPaths(in: values) >= Self.largeAnswer { _ = ckeychain_release_free_memory() }
    }

    /// How many object paths `values` hold, at any depth (a `GetAll` answer holds `Items` in a variant in a
    /// dictionary entry).
    static func objectPaths(in values: [DBusValue]) -> Int {
        values.reduce(0) { count, value in
            switch value {
            case .objectPath: count + 1
            case .array(_, let elements), .structure(let elements): count + objectPaths(in: elements)
            case .dictEntry(let key, let value): count + objectPaths(in: [key, value])
            case .variant(let inner): count + objectPaths(in: [inner])
            default: count
            }
        }
    }

    private func serve(_ call: DBusMethodCall) async {
        let known = credentials.withLock { $0[call.sender] }
        var pid = known?.pid
        var uid = known?.uid
        if known == nil {
            do {
                let found = try await bus.credentials(of: call.sender)
                pid = found.processID
                uid = found.userID
                credentials.withLock { cache in
                    if cache.count >= 16_384 { cache.removeAll() }
                    cache[call.sender] = (pid, uid)
                }
            } catch {
                return bus.replyError(to: call, name: SecretServiceError.accessDenied, message: "The bus could not say which process is calling: \(error)")
            }
        }
        workers.async { [self, pid, uid] in
            let result: Result<[DBusValue], SecretServiceError>
            do throws(KeychainError) {
                let caller = try access.caller(busName: call.sender, pid: pid, uid: uid)
                result = Result { () throws(SecretServiceError) in try dispatch(call, caller: caller) }
            } catch {
                result = .failure(SecretServiceError(error))
            }
            finish(call, result)
        }
    }

    private func finish(_ call: DBusMethodCall, _ result: Result<[DBusValue], SecretServiceError>) {
        switch result {
        case .success(let values):
            releaseMemory(after: values)
            bus.reply(to: call, values)
        case .failure(let error):
            logger.debug("secret service call failed", metadata: ["member": "\(call.member)", "error": "\(error.name)"])
            bus.replyError(to: call, name: error.name, message: error.message)
        }
    }

    /// Runs `body`, turning a keychain failure into its D-Bus error.
    func keychain<T>(_ body: () throws(KeychainError) -> T) throws(SecretServiceError) -> T {
        do {
            return try body()
        } catch {
            throw SecretServiceError(error)
        }
    }

    /// Checks a call's signature.
    func expect(_ call: DBusMethodCall, _ signature: String) throws(SecretServiceError) {
        guard call.signature == signature else {
            throw .invalid("\(call.interface ?? "").\(call.member) takes (\(signature)), not (\(call.signature)).")
        }
    }

    /// Emits a signal (without waiting for it to be sent).
    func signal(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue]) {
        bus.emitSignal(path: path, interface: interface, member: member, arguments)
    }

    private func dispatch(_ call: DBusMethodCall, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        if call.path == Self.portalPath { return try portalMethod(call, caller: caller) }
        if call.interface == "org.freedesktop.DBus.Introspectable" {
            guard call.member == "Introspect" else { throw unknownMethod(call) }
            try expect(call, "")
            return [.string(try introspect(call.path, caller: caller))]
        }
        guard let object = SecretObjectPath(call.path) else {
            throw SecretServiceError(name: SecretServiceError.unknownObject, message: "No object at \(call.path).")
        }
        if call.interface == "org.freedesktop.DBus.Properties" {
            return try properties(call, object: object, caller: caller)
        }
        if call.interface == "org.freedesktop.DBus.Peer" {
            switch call.member {
            case "Ping": return []
            default: throw SecretServiceError(name: SecretServiceError.unknownMethod, message: "org.freedesktop.DBus.Peer.\(call.member) is not answered.")
            }
        }
        switch object {
        case .service: return try serviceMethod(call, caller: caller)
        case .collection(let name): return try collectionMethod(call, name: name, caller: caller)
        case .item(let name, let id): return try itemMethod(call, collection: name, item: id, caller: caller)
        case .session(let id): return try sessionMethod(call, id: id, caller: caller)
        case .prompt(let id): return try promptMethod(call, id: id, caller: caller)
        }
    }

    /// Whether `interface` is `expected` (a call without an interface matches any).
    func on(_ call: DBusMethodCall, _ expected: String) -> Bool { call.interface == nil || call.interface == expected }

    func unknownMethod(_ call: DBusMethodCall) -> SecretServiceError {
        SecretServiceError(name: SecretServiceError.unknownMethod, message: "No method \(call.interface.map { $0 + "." } ?? "")\(call.member) at \(call.path).")
    }

    // MARK: Collections as the caller sees them

    /// The collection `name` names, as `caller` may see it: nil when there is none, or it belongs to a group the
    /// caller is not registered for.
    func visibleCollection(_ name: SecretObjectPath.CollectionName, caller: SecretServiceCaller) throws(SecretServiceError) -> SecretCollection? {
        let id: String?
        switch name {
        case .id(let given): id = given
        case .alias(let alias): id = try keychain { () throws(KeychainError) in try store.resolve(alias: alias) }
        }
        guard let id, let collection = try keychain({ () throws(KeychainError) in try store.collection(id: id) }) else { return nil }
        return isVisible(collection, to: caller) ? collection : nil
    }

    /// Every collection `caller` may see.
    func visibleCollections(_ caller: SecretServiceCaller) throws(SecretServiceError) -> [SecretCollection] {
        try keychain { () throws(KeychainError) in try store.collections() }.filter { isVisible($0, to: caller) }
    }

    func isVisible(_ collection: SecretCollection, to caller: SecretServiceCaller) -> Bool {
        if let groups = caller.registeredGroups, groups.contains("*") || groups.contains(collection.group) { return true }
        return access.refusal(caller, collection) == nil
    }

    /// Whether `collection` is open to `caller` now: the keychain unlocked, the collection not locked by a client
    /// (`Lock` without a passcode), and the caller allowed.
    func isUnlocked(_ collection: SecretCollection, for caller: SecretServiceCaller) throws(SecretServiceError) -> Bool {
        let state = store.engine.lockState
        guard state == .unlocked || state == .noPasscode, !store.isLockedByClient(collection.id) else { return false }
        return try keychain { () throws(KeychainError) in try access.isGranted(caller, collection) }
    }

    /// `collection`, or IsLocked when it is not open to `caller`.
    func requireUnlocked(_ collection: SecretCollection, for caller: SecretServiceCaller) throws(SecretServiceError) {
        guard try isUnlocked(collection, for: caller) else {
            throw .locked("Collection '\(collection.label)'", lastRefusal: access.lastRefusal(caller))
        }
    }
}
