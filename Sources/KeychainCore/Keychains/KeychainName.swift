import Foundation

/// The name of one of a user's keychains, as macOS names its keychain files (`NAME.keychain-db`): `login`, the
/// keychain a user has always had; any number the user creates (`security create-keychain work`); `System`, the
/// machine's keychain that system-mode keychaind keeps for root; and `SystemRoots`, the read-only keychain of the
/// distribution's trusted root certificates.
///
/// Only names travel and are stored, never paths: a keychain always lives in the keychain folder of its user
/// (``KeychainLocation/location(of:)``), so no caller can point keychaind at a file of its choosing.
package struct KeychainName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The name, without a suffix (`login`, `work`).
    package let rawValue: String

    /// The keychain the user has always had: the files directly in the keychain folder.
    package static let login = KeychainName(unchecked: "login")
    /// The machine's keychain, for machine-wide items: served by system-mode keychaind to root.
    package static let system = KeychainName(unchecked: "System")
    /// The trusted root certificates of the distribution's trust store, read-only.
    package static let systemRoots = KeychainName(unchecked: "SystemRoots")

    /// The longest name, in UTF-8 bytes.
    package static let maximumLength = 64

    private init(unchecked: String) { rawValue = unchecked }

    /// A keychain's name: 1 to 64 of `A–Z a–z 0–9 . _ -`, not starting with a dot. macOS's file names are
    /// understood too: a trailing `.keychain` or `.keychain-db` is dropped, and `SystemRootCertificates` names
    /// ``systemRoots``.
    ///
    /// - Throws: `errSecParam` naming what is wrong.
    package init(_ name: String) throws(KeychainError) {
        var bare = name
        for suffix in [".keychain-db", ".keychain"] where bare.hasSuffix(suffix) {
            bare.removeLast(suffix.count)
            break
        }
        if bare == "SystemRootCertificates" { bare = KeychainName.systemRoots.rawValue }
        guard !bare.isEmpty, bare.utf8.count <= KeychainName.maximumLength else {
            throw KeychainError(code: .invalidParameter, message: "A keychain's name must be 1 to \(KeychainName.maximumLength) characters long; give a name such as `work`.")
        }
        guard bare.first != ".", bare.unicodeScalars.allSatisfy(KeychainName.allowed.contains) else {
            throw KeychainError(code: .invalidParameter, message: "A keychain's name may hold only letters, digits, `.`, `_` and `-`, and may not start with `.`; give a name such as `work`.")
        }
        rawValue = bare
    }

    /// The keychain a command-line argument or a `SecKeychainOpen` path names: a bare name (`work`,
    /// `work.keychain-db`) or a path whose last component is one (`~/Library/Keychains/work.keychain-db`,
    /// `/Library/Keychains/System.keychain`); the keychain folder itself names ``login``, and a keychain's database
    /// file (`…/work.keychain-db/keychain-2.db`, as `show-keychain-info` prints it) names that keychain.
    ///
    /// - Parameter keychainFolder: the login keychain's folder, which names ``login`` when given as a path.
    package init(argument: String, keychainFolder: String? = nil) throws(KeychainError) {
        var text = argument
        while text.count > 1, text.hasSuffix("/") { text.removeLast() }
        // The database file names its keychain too (what `show-keychain-info` prints): its folder is the keychain.
        if text.hasSuffix("/" + KeychainLocation.databaseFileName) { text.removeLast(KeychainLocation.databaseFileName.count + 1) }
        if let keychainFolder, text == keychainFolder {
            self = .login
            return
        }
        if let slash = text.lastIndex(of: "/") { text = String(text[text.index(after: slash)...]) }
        try self.init(text)
    }

    /// The keychain's file name, as macOS names it (`work.keychain-db`): the folder holding its files.
    package var fileName: String { rawValue + ".keychain-db" }

    /// Whether items can never be added, changed or deleted (``systemRoots``).
    package var isReadOnly: Bool { self == .systemRoots }

    /// Whether the name is one the system gives (``login``, ``system``, ``systemRoots``): such a keychain cannot
    /// be created or deleted.
    package var isReserved: Bool { self == .login || self == .system || self == .systemRoots }

    package var description: String { rawValue }

    package static func < (lhs: KeychainName, rhs: KeychainName) -> Bool { lhs.rawValue < rhs.rawValue }

    private static let allowed: Set<Unicode.Scalar> = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".unicodeScalars)
}

extension KeychainLocation {
    /// The folder holding the keychains a user created beside the login keychain (`keychains/NAME.keychain-db/`,
    /// each a keychain folder of its own: its database, keybag and passcode).
    package var keychainsFolder: String { home + "/keychains" }

    /// Where the keychain `name` keeps its files, when this is the login keychain's location: the login keychain
    /// here, any other in ``keychainsFolder``.
    package func location(of name: KeychainName) -> KeychainLocation {
        name == .login ? self : KeychainLocation(home: keychainsFolder + "/" + name.fileName)
    }

    /// The search list and default keychain (see ``KeychainSearchList``).
    package var searchListPath: String { home + "/search-list.json" }
}
