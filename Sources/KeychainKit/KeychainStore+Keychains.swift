import Foundation
import KeychainClient
import KeychainCore

extension KeychainStore {
    /// One of the user's keychains, as ``KeychainStore/keychains()`` lists it.
    public struct KeychainInfo: Sendable, Hashable {
        /// Its name (`login`, `work`, `SystemRoots`).
        public var name: String
        /// The folder holding its files.
        public var path: String
        /// Whether it is locked; nil when it is not open and its state is not known.
        public var lockStatus: LockStatus?
        /// Whether items can be added, changed or deleted in it (SystemRoots cannot).
        public var isReadOnly: Bool
        /// Whether a search with no keychains of its own looks in it.
        public var isInSearchList: Bool
        /// Whether new items go to it when an add names no keychain.
        public var isDefault: Bool
    }

    /// The store acting on the user's keychain `name` (macOS's `SecKeychainOpen`): its searches look only there,
    /// its adds go there, and ``lock()``, ``unlock(passcode:)``, ``lockStatus`` and ``setPasscode(_:currentPasscode:)``
    /// apply to it. `"login"` is the keychain a user has always had. A path whose last component names a
    /// keychain (`~/Library/Keychains/work.keychain-db`, as macOS scripts give) names it too.
    ///
    /// ```swift
    /// let work = try KeychainStore.default.keychain(named: "work")
    /// try Keychain(service: "vpn", in: work).set("s3cret", for: "alice")
    /// ```
    ///
    /// - Throws: `KeychainError` with `errSecParam` for a malformed name. A keychain that does not exist is
    ///   reported by the first call (`errSecNoSuchKeychain`).
    public func keychain(named name: String) throws(KeychainError) -> KeychainStore {
        let keychain = try KeychainName(argument: name, keychainFolder: directory)
        let location = KeychainLocation(home: directory).location(of: keychain)
        return KeychainStore(connection: connection.keychain(named: keychain), directory: location.home, accessGroups: accessGroups)
    }

    /// The name of the keychain `argument` names: a name, or a path ending in one.
    public func keychainName(_ argument: String) throws(KeychainError) -> String {
        try KeychainName(argument: argument, keychainFolder: directory).rawValue
    }

    /// Every keychain of the user: the login keychain first, then those made with ``createKeychain(named:passcode:)``,
    /// then System and SystemRoots.
    ///
    /// - Throws: `KeychainError` when keychaind cannot be reached or the search list's file is damaged.
    public func keychains() throws(KeychainError) -> [KeychainInfo] {
        let listing = try connection.keychains()
        return listing.keychains.map { summary in
            KeychainInfo(
                name: summary.name.rawValue, path: summary.path, lockStatus: summary.lockState.map(LockStatus.init),
                isReadOnly: summary.isReadOnly, isInSearchList: listing.searchList.contains(summary.name),
                isDefault: listing.defaultKeychain == summary.name)
        }
    }

    /// Makes a keychain beside the login keychain, protected by `passcode` (nil or empty: none), and returns a store
    /// acting on it. It is not searched until it is put in the search list (``setSearchList(_:)``).
    ///
    /// - Throws: `KeychainError` with `errSecDuplicateKeychain` when it exists, `errSecParam` for a malformed or
    ///   reserved name; through keychaind, only the `security` tool may.
    @discardableResult
    public func createKeychain(named name: String, passcode: String?) throws(KeychainError) -> KeychainStore {
        try connection.createKeychain(KeychainName(name), passcode: passcode)
        return try keychain(named: name)
    }

    /// Deletes the keychain `name` and its items; it leaves the search list.
    ///
    /// - Throws: `KeychainError` with `errSecNoSuchKeychain` when there is none, `errSecParam` for login, System
    ///   and SystemRoots.
    public func deleteKeychain(named name: String) throws(KeychainError) {
        try connection.deleteKeychain(KeychainName(name))
    }

    /// The keychains a search with no keychains of its own looks in, in order.
    public var searchList: [String] {
        get throws(KeychainError) { try connection.keychains().searchList.map(\.rawValue) }
    }

    /// Replaces the search list. Every keychain named must exist.
    public func setSearchList(_ names: [String]) throws(KeychainError) {
        try connection.setSearchList(names.map { (name) throws(KeychainError) in try KeychainName(name) }, defaultKeychain: nil)
    }

    /// The keychain new items go to when an add names none.
    public var defaultKeychain: String {
        get throws(KeychainError) { try connection.keychains().defaultKeychain.rawValue }
    }

    /// Makes `name` the keychain new items go to.
    public func setDefaultKeychain(_ name: String) throws(KeychainError) {
        try connection.setSearchList(nil, defaultKeychain: KeychainName(name))
    }
}
