import Foundation
import Synchronization

/// The other keychains of a login keychain's user, as its engine holds them: opened on first use and kept open,
/// the search list as last read (read again when its file changes), and, under system-mode keychaind for root, the
/// machine's System keychain.
package final class OtherKeychains: Sendable {
    struct State {
        var engines: [KeychainName: KeychainEngine] = [:]
        var searchList: (stamp: FileStamp?, list: KeychainSearchList)?
        var system: KeychainEngine?
    }
    let state = Mutex(State())

    init() {}
}

extension KeychainEngine {
    // MARK: Finding a keychain

    /// The keychain `name` of this login keychain's user: this engine for ``KeychainName/login``, another opened
    /// on first use (with this engine's TPM, passcode policy, clocks and idle time) and kept open.
    ///
    /// - Throws: `errSecNoSuchKeychain` when there is no such keychain (or, for ``KeychainName/system``, when this
    ///   keychaind serves no System keychain to this user).
    package func keychain(named name: KeychainName) throws(KeychainError) -> KeychainEngine {
        if name == .login { return self }
        if name == .system {
            guard let system = otherKeychains.state.withLock({ $0.system }) else {
                throw KeychainError(code: .notAvailable, status: .noSuchKeychain, message: "There is no System keychain here: system-mode keychaind (`keychaind --system`) keeps it, for root only.")
            }
            return system
        }
        if name == .systemRoots { return try systemRootsKeychain() }
        return try otherKeychains.state.withLock { (state: inout OtherKeychains.State) throws(KeychainError) -> KeychainEngine in
            if let open = state.engines[name] { return open }
            let engine = try sibling(at: location.location(of: name), createIfMissing: false, named: name)
            state.engines[name] = engine
            return engine
        }
    }

    /// Lets root's login keychain reach the machine's System keychain (system-mode keychaind).
    package func attachSystemKeychain(_ system: KeychainEngine) {
        otherKeychains.state.withLock { $0.system = system }
    }

    /// The keychains open beside this one (for the idle lock and shutdown).
    package var openKeychains: [KeychainEngine] {
        otherKeychains.state.withLock { Array($0.engines.values) }
    }

    /// A keychain engine at `location` made like this one.
    func sibling(at location: KeychainLocation, createIfMissing: Bool, named name: KeychainName) throws(KeychainError) -> KeychainEngine {
        do {
            return try KeychainEngine(
                location: location, createIfMissing: createIfMissing, logger: logger, random: random, now: now,
                defaultIdleTimeout: defaultIdleTimeout, clocks: clocks, tpm: tpm, passcodePolicy: passcodePolicy)
        } catch  where error.status == .noSuchKeychain {
            throw KeychainError(
                code: .notAvailable, status: .noSuchKeychain,
                message: "There is no keychain named \(name). Make it with `security create-keychain \(name)`, or see `security list-keychains` for the ones there are.")
        }
    }

    // MARK: The search list

    /// The search list and default keychain, read again whenever its file changes; System follows login for root
    /// under system-mode keychaind until the list is set.
    package func searchList() throws(KeychainError) -> KeychainSearchList {
        let stamp = FileStamp(path: location.searchListPath)
        if let cached = otherKeychains.state.withLock({ $0.searchList }), cached.stamp == stamp { return cached.list }
        var list = try KeychainSearchList.load(location) ?? .initial
        if stamp == nil, otherKeychains.state.withLock({ $0.system != nil }) { list.searchList.append(.system) }
        otherKeychains.state.withLock { $0.searchList = (stamp, list) }
        return list
    }

    /// Replaces the search list, the default keychain, or both (nil leaves one as it is). Every keychain named
    /// must exist.
    package func setSearchList(_ names: [KeychainName]?, defaultKeychain: KeychainName?) throws(KeychainError) {
        var list = try searchList()
        if let names {
            guard names.count <= KeychainSearchList.maximumCount else {
                throw KeychainError(code: .invalidParameter, message: "A search list holds at most \(KeychainSearchList.maximumCount) keychains.")
            }
            var seen = Set<KeychainName>()
            for name in names {
                _ = try keychain(named: name)
                seen.insert(name)
            }
            list.searchList = names.filter { seen.remove($0) != nil }
        }
        if let defaultKeychain {
            _ = try keychain(named: defaultKeychain)  // it must exist
            if defaultKeychain.isReadOnly {
                throw KeychainError(code: .invalidParameter, status: .readOnly, message: "\(defaultKeychain) is read-only, so new items cannot go there. Make another keychain the default.")
            }
            list.defaultKeychain = defaultKeychain
        }
        try list.save(location)
        otherKeychains.state.withLock { $0.searchList = nil }
    }

    // MARK: Making and removing keychains

    /// Every keychain of this user: login first, then the ones made beside it by name, System and SystemRoots last.
    package func keychainListing() throws(KeychainError) -> KeychainListing {
        let list = try searchList()
        var summaries = [KeychainSummary(name: .login, path: location.home, lockState: lockState, isReadOnly: false)]
        let open = otherKeychains.state.withLock { $0.engines }
        for name in try createdKeychainNames() {
            summaries.append(KeychainSummary(name: name, path: location.location(of: name).home, lockState: open[name]?.lockState, isReadOnly: false))
        }
        if let system = otherKeychains.state.withLock({ $0.system }) {
            summaries.append(KeychainSummary(name: .system, path: system.location.home, lockState: system.lockState, isReadOnly: false))
        }
        if let roots = try? systemRootsKeychain() {
            summaries.append(KeychainSummary(name: .systemRoots, path: roots.location.home, lockState: roots.lockState, isReadOnly: true))
        }
        return KeychainListing(keychains: summaries, searchList: list.searchList, defaultKeychain: list.defaultKeychain)
    }

    /// The keychains made beside the login keychain (folders `keychains/NAME.keychain-db` holding a database),
    /// sorted by name.
    func createdKeychainNames() throws(KeychainError) -> [KeychainName] {
        let folder = location.keychainsFolder
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch CocoaError.fileReadNoSuchFile {
            return []
        } catch {
            throw KeychainError(code: .io, message: "Cannot list \(folder). Check its permissions.", cause: DescribedError(error))
        }
        var names: [KeychainName] = []
        for entry in entries where entry.hasSuffix(".keychain-db") {
            guard let name = try? KeychainName(entry), !name.isReserved,
                FileManager.default.fileExists(atPath: location.location(of: name).databasePath)
            else { continue }
            names.append(name)
        }
        return names.sorted()
    }

    /// Makes the keychain `name` beside this login keychain, with `passcode` when given (then it starts unlocked in
    /// this process), and returns it. It is not put in the search list (`security list-keychains -s` does that).
    ///
    /// - Throws: `errSecDuplicateKeychain` when it exists, `errSecParam` for a name the system gives.
    @discardableResult
    package func createKeychain(_ name: KeychainName, passcode: String?) throws(KeychainError) -> KeychainEngine {
        guard !name.isReserved else {
            throw KeychainError(code: .invalidParameter, message: "\(name) is a keychain the system provides; give the new keychain another name.")
        }
        return try otherKeychains.state.withLock { (state: inout OtherKeychains.State) throws(KeychainError) -> KeychainEngine in
            let target = location.location(of: name)
            if state.engines[name] != nil || FileManager.default.fileExists(atPath: target.databasePath) {
                throw KeychainError(
                    code: .duplicateItem, status: .duplicateKeychain, message: "A keychain named \(name) already exists. Give another name, or delete it first with `security delete-keychain \(name)`."
                )
            }
            try FileSystem.ensurePrivateDirectory(location.keychainsFolder)
            let engine = try sibling(at: target, createIfMissing: true, named: name)
            if let passcode, !passcode.isEmpty {
                do throws(KeychainError) {
                    try engine.changePasscode(from: nil, to: passcode)
                } catch {
                    try? engine.close()
                    try? FileManager.default.removeItem(atPath: target.home)
                    throw error
                }
            }
            state.engines[name] = engine
            logger.info("created a keychain", metadata: ["name": "\(name)"])
            return engine
        }
    }

    /// Deletes the keychain `name`: its files are removed and it leaves the search list (the login keychain
    /// becomes the default if it was).
    ///
    /// - Throws: `errSecParam` for the login, System and SystemRoots keychains; `errSecNoSuchKeychain` when there
    ///   is none.
    package func deleteKeychain(_ name: KeychainName) throws(KeychainError) {
        guard !name.isReserved else {
            throw KeychainError(code: .invalidParameter, message: "\(name) is a keychain the system provides and cannot be deleted.")
        }
        let engine = try keychain(named: name)
        var list = try searchList()
        try otherKeychains.state.withLock { (state: inout OtherKeychains.State) throws(KeychainError) in
            state.engines[name] = nil
            engine.lock()
            try? engine.close()
            let folder = engine.location.home
            var info = stat()
            guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw KeychainError(code: .io, message: "\(folder) is not a folder (a link or a file); remove it by hand.")
            }
            do {
                try FileManager.default.removeItem(atPath: folder)
            } catch {
                throw KeychainError(code: .io, message: "Cannot remove \(folder). Check its permissions, then delete it again.", cause: DescribedError(error))
            }
        }
        if list.searchList.contains(name) || list.defaultKeychain == name {
            list.searchList.removeAll { $0 == name }
            if list.defaultKeychain == name { list.defaultKeychain = .login }
            try list.save(location)
            otherKeychains.state.withLock { $0.searchList = nil }
        }
        logger.info("deleted a keychain", metadata: ["name": "\(name)"])
    }

    // MARK: Items across keychains

    /// The keychains an item call acts on: the query's (`kSecMatchSearchList`, `kSecUseKeychain`), else the
    /// search list.
    func keychains(for query: ItemQuery) throws(KeychainError) -> [KeychainName] {
        if let named = query.keychains { return named }
        return try searchList().searchList
    }

    /// `SecItemAdd` into the query's keychain (`kSecUseKeychain`), else the default keychain.
    package func addRouted(_ query: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> FoundItem {
        let target: KeychainName
        if let named = query.keychains {
            guard named.count == 1, let only = named.first else {
                throw KeychainError(code: .invalidParameter, message: "An item is added to one keychain: give one in kSecUseKeychain, not a search list.")
            }
            target = only
        } else {
            target = try searchList().defaultKeychain
        }
        if target == .login { return try add(query, caller: caller) }
        return try writable(target).add(query, caller: caller)
    }

    /// `SecItemCopyMatching` over the keychains in order: the matches of each, until the limit is reached. A
    /// locked keychain (`errSecInteractionNotAllowed`) adds nothing; when no keychain matched, its error is the
    /// answer, else `errSecItemNotFound`.
    package func findRouted(_ query: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> [FoundItem] {
        let names = try keychains(for: query)
        if names == [.login] { return try find(query, caller: caller) }
        var found: [FoundItem] = []
        var locked: KeychainError?
        for name in names {
            var remaining = query
            switch query.limit {
            case .one: if !found.isEmpty { return found }
            case .count(let n):
                if found.count >= n { return found }
                remaining.limit = n - found.count == 1 ? .one : .count(n - found.count)
            case .all: break
            }
            do {
                found += try keychain(named: name).find(remaining, caller: name == .systemRoots ? .unrestricted(defaultGroup: KeychainEngine.systemRootsGroup) : caller)
            } catch  where error.code == .itemNotFound || error.status == .noSuchKeychain && query.keychains == nil {
                continue
            } catch  where error.code == .interactionNotAllowed {
                locked = locked ?? error
            }
        }
        if found.isEmpty { throw locked ?? .notFound() }
        return found
    }

    /// `SecItemUpdate` in every keychain of the list holding a match.
    package func updateRouted(
        _ query: ItemQuery, attributes: [String: AttributeValue], sync: Bool?, data: Data?,
        caller: AccessPolicy
    ) throws(KeychainError) {
        let names = try keychains(for: query)
        if names == [.login] {
            try update(query, attributes: attributes, sync: sync, data: data, caller: caller)
            return
        }
        var updated = false
        var locked: KeychainError?
        for name in names where !(name.isReadOnly && query.keychains == nil) {
            do {
                try writable(name).update(query, attributes: attributes, sync: sync, data: data, caller: caller)
                updated = true
            } catch  where error.code == .itemNotFound || error.status == .noSuchKeychain && query.keychains == nil {
                continue
            } catch  where error.code == .interactionNotAllowed {
                locked = locked ?? error
            }
        }
        if !updated { throw locked ?? .notFound() }
    }

    /// `SecItemDelete` in every keychain of the list; how many items went.
    package func deleteRouted(_ query: ItemQuery, caller: AccessPolicy) throws(KeychainError) -> Int {
        let names = try keychains(for: query)
        if names == [.login] { return try delete(query, caller: caller) }
        var deleted = 0
        var locked: KeychainError?
        for name in names where !(name.isReadOnly && query.keychains == nil) {
            do {
                deleted += try writable(name).delete(query, caller: caller)
            } catch  where error.code == .itemNotFound || error.status == .noSuchKeychain && query.keychains == nil {
                continue
            } catch  where error.code == .interactionNotAllowed {
                locked = locked ?? error
            }
        }
        if deleted == 0 { throw locked ?? .notFound() }
        return deleted
    }

    /// A key that never leaves, made or used: such keys live in the login keychain only.
    package func tokenKeyRouted(
        _ request: TokenKeyRequest, keychains: [KeychainName]?, caller: AccessPolicy,
        authentication: AuthenticationOptions
    ) throws(KeychainError) -> TokenKeyResult {
        if let keychains, keychains != [.login] {
            throw KeychainError(
                code: .unimplemented,
                message: "Keys that never leave the keychain (kSecAttrTokenIDSecureEnclave) are kept in the login keychain only. Leave out kSecUseKeychain, or name the login keychain.")
        }
        return try tokenKey(request, caller: caller, authentication: authentication)
    }

    /// Refuses to `action` the keychain `name` when it is read-only (`errSecReadOnly`).
    package static func refuseReadOnly(_ name: KeychainName?, _ action: String) throws(KeychainError) {
        guard let name, name.isReadOnly else { return }
        throw KeychainError(code: .invalidParameter, status: .readOnly, message: "Cannot \(action) \(name): it is read-only, built from the distribution's trust store.")
    }

    /// The keychain `name`, refusing a read-only one (`errSecReadOnly`).
    func writable(_ name: KeychainName) throws(KeychainError) -> KeychainEngine {
        guard !name.isReadOnly else {
            throw KeychainError(
                code: .invalidParameter, status: .readOnly,
                message: "\(name) is read-only: its certificates come from the distribution's trust store. Add the item to another keychain (security … -k login).")
        }
        return try keychain(named: name)
    }
}
