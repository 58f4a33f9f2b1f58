import Foundation

/// The keychains a query with no `kSecMatchSearchList` searches, in order, and the keychain new items go to when
/// an add names none: macOS's user search list and default keychain (`security list-keychains -s`,
/// `security default-keychain -s`).
///
/// Kept in the login keychain's folder (`search-list.json`, 0600, written whole or not at all and never through a
/// link). With no file the list is the login keychain alone (and, for root under system-mode keychaind, the System
/// keychain after it), and the default is the login keychain.
package struct KeychainSearchList: Sendable, Hashable, Codable {
    /// The keychains searched, in order; never empty of meaning: an empty list searches nothing.
    package var searchList: [KeychainName]
    /// Where items go when an add names no keychain.
    package var defaultKeychain: KeychainName

    package init(searchList: [KeychainName], defaultKeychain: KeychainName) {
        self.searchList = searchList
        self.defaultKeychain = defaultKeychain
    }

    /// The list a user has before changing it.
    package static let initial = KeychainSearchList(searchList: [.login], defaultKeychain: .login)

    /// The most keychains a search list may hold.
    package static let maximumCount = 64

    private enum CodingKeys: String, CodingKey {
        case version, searchList = "search-list", defaultKeychain = "default"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == 1 else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: container, debugDescription: "version \(version) is not 1")
        }
        let names = try container.decode([String].self, forKey: .searchList)
        guard names.count <= KeychainSearchList.maximumCount else {
            throw DecodingError.dataCorruptedError(forKey: .searchList, in: container, debugDescription: "more than \(KeychainSearchList.maximumCount) keychains")
        }
        let defaultName = try container.decode(String.self, forKey: .defaultKeychain)
        do throws(KeychainError) {
            searchList = try names.map { (name) throws(KeychainError) in try KeychainName(name) }
            defaultKeychain = try KeychainName(defaultName)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .searchList, in: container, debugDescription: error.message)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(1, forKey: .version)
        try container.encode(searchList.map(\.rawValue), forKey: .searchList)
        try container.encode(defaultKeychain.rawValue, forKey: .defaultKeychain)
    }

    /// The list stored for the login keychain at `location`; nil when none was ever stored.
    ///
    /// - Throws: `errSecIO` when the file cannot be read, `errSecDecode` when it is damaged (saying how to mend it).
    package static func load(_ location: KeychainLocation) throws(KeychainError) -> KeychainSearchList? {
        guard let data = try FileSystem.read(location.searchListPath) else { return nil }
        do {
            return try JSONDecoder().decode(KeychainSearchList.self, from: data)
        } catch {
            throw KeychainError(
                code: .corruptData,
                message: "\(location.searchListPath) is damaged (\(error)). Set the search list again with `security list-keychains -s …`, or remove the file to search the login keychain alone.")
        }
    }

    /// Stores the list for the login keychain at `location`.
    package func save(_ location: KeychainLocation) throws(KeychainError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(self)
        } catch {
            throw KeychainError(code: .internal, message: "The search list could not be encoded.", cause: DescribedError(error))
        }
        _ = try FileSystem.writeAtomically(data + Data("\n".utf8), to: location.searchListPath, exclusive: false)
    }
}

/// One keychain as `security list-keychains` and `show-keychain-info` show it.
package struct KeychainSummary: Sendable, Hashable {
    /// Its name.
    package var name: KeychainName
    /// The folder holding its files (for SystemRoots, the keychain built from the trust store).
    package var path: String
    /// Whether it is locked, unlocked, has no passcode; nil when it is not open and its state is not known.
    package var lockState: LockState?
    /// Whether items can be added, changed or deleted in it.
    package var isReadOnly: Bool

    package init(name: KeychainName, path: String, lockState: LockState?, isReadOnly: Bool) {
        self.name = name
        self.path = path
        self.lockState = lockState
        self.isReadOnly = isReadOnly
    }
}

/// A user's keychains: every one there is, the search list and the default.
package struct KeychainListing: Sendable, Hashable {
    /// Every keychain of the user, the login keychain first, then by name.
    package var keychains: [KeychainSummary]
    /// The keychains searched, in order.
    package var searchList: [KeychainName]
    /// Where new items go.
    package var defaultKeychain: KeychainName

    package init(keychains: [KeychainSummary], searchList: [KeychainName], defaultKeychain: KeychainName) {
        self.keychains = keychains
        self.searchList = searchList
        self.defaultKeychain = defaultKeychain
    }

    /// The summary of the keychain `name`, when it exists.
    package func summary(of name: KeychainName) -> KeychainSummary? {
        keychains.first { $0.name == name }
    }
}
