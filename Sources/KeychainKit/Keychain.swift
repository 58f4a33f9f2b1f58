import Foundation
import KeychainCore

/// A keychain of passwords, tokens and other small secrets, addressed by key: the Swift-native API.
///
/// A `Keychain` is a lightweight value naming *which* items it works on: a service's generic passwords,
/// or a server's internet passwords. Each key is an item's account; the value is its secret.
///
/// ```swift
/// let keychain = Keychain(service: "com.example.app")
/// try keychain.set("s3cret", for: "alice")
/// let password = try keychain.string(for: "alice")       // "s3cret"; nil when there is none
/// try keychain.set(Token(value: "…", expiry: date), for: "token")
/// let token = try keychain.value(Token.self, for: "token")
/// try keychain.remove("alice")
/// ```
///
/// Options are modifiers that return a new keychain, so a configured keychain can be kept in a constant:
///
/// ```swift
/// let shared = Keychain(service: "com.example.app")
///     .accessGroup("TEAMID.com.example.shared")
///     .accessibility(.afterFirstUnlock)
///     .synchronizable(true)
/// ```
///
/// Internet passwords are keyed by server:
///
/// ```swift
/// let github = Keychain(server: "https://github.com")   // server github.com, protocol .https
/// try github.set("ghp_…", for: "octocat")
/// ```
///
/// Every operation throws `KeychainError`, whose `KeychainError/status` is the `OSStatus` Apple's
/// keychain reports for the same failure. Reading a key that has no item is not an error: it returns `nil`.
///
/// A keychain uses ``KeychainStore/default`` (the folder and entitlements the environment names) unless it
/// is created with a store, as in ``init(service:in:)``. It is `Sendable` and safe to use from any thread;
/// several processes may share one keychain folder.
///
/// ## Which items a keychain sees
///
/// - A generic-password keychain sees the items of its ``service``; an internet-password keychain sees the
///   items whose server, protocol, port, path, authentication type and security domain all equal its own
///   (attributes it leaves unset are stored and matched as Apple's empty defaults: protocol and port 0,
///   path and security domain empty).
/// - Without ``accessGroup``, reads see the items of every access group the store is entitled to, and new
///   items go to the store's first group; with one, every operation is confined to that group.
/// - A keychain sees only local items, or with ``synchronizable(_:)`` `true` only synchronizable ones: the
///   two are separate items even under the same key.
/// - Matching is byte-exact, as in Apple's keychain: keys are case-sensitive and not Unicode-normalized.
public struct Keychain: Sendable {
    // MARK: Configuration

    /// The service of a generic-password keychain (`kSecAttrService`); `nil` for an internet-password keychain.
    public let service: String?
    /// The server of an internet-password keychain (`kSecAttrServer`); `nil` for a generic-password keychain.
    public let server: String?
    /// The protocol of an internet-password keychain (`kSecAttrProtocol`), if it has one.
    public let `protocol`: KeychainInternetProtocol?
    /// The port of an internet-password keychain (`kSecAttrPort`), if it has one.
    public let port: Int?
    /// The path of an internet-password keychain (`kSecAttrPath`), if it has one.
    public let path: String?
    /// The authentication type of an internet-password keychain (`kSecAttrAuthenticationType`); `nil` for a
    /// generic-password keychain.
    public let authenticationType: KeychainAuthenticationType?
    /// The security domain of an internet-password keychain (`kSecAttrSecurityDomain`), if it has one.
    public let securityDomain: String?

    /// The access group every operation is confined to (`kSecAttrAccessGroup`), or `nil` for the store's
    /// groups. Set it with ``accessGroup(_:)``.
    public private(set) var accessGroup: String?
    /// The accessibility written items get (`kSecAttrAccessible`), or `nil` for Apple's default,
    /// ``KeychainAccessibility/whenUnlocked``. Set it with ``accessibility(_:)``; it does not filter reads.
    public private(set) var accessibility: KeychainAccessibility?
    /// Whether the keychain works on synchronizable items (`kSecAttrSynchronizable`) instead of local ones.
    /// Set it with ``synchronizable(_:)``.
    public private(set) var isSynchronizable = false
    /// The access control written items get (`kSecAttrAccessControl`), or `nil` for none. It carries its own
    /// accessibility, which replaces ``accessibility`` on written items. Set it with ``accessControl(_:)``.
    public private(set) var accessControl: KeychainAccessControl?
    /// How calls may ask for the user's presence when an item needs it; ``KeychainAuthentication/allowPrompt``
    /// unless set with ``authentication(_:)``.
    public private(set) var authentication = KeychainAuthentication.allowPrompt
    /// The label written items get (`kSecAttrLabel`), or `nil` to leave it alone. Set it with ``label(_:)``.
    public private(set) var label: String?
    /// The comment written items get (`kSecAttrComment`), or `nil` to leave it alone. Set it with
    /// ``comment(_:)``.
    public private(set) var comment: String?
    /// The programs written items trust to read them besides the store's access group (see
    /// ``KeychainTrustedApplication``), or `nil` to leave items' lists alone. Set it with ``trustedApplications(_:)``.
    public private(set) var trustedApplications: [KeychainTrustedApplication]?

    let store: KeychainStore?
    /// A problem with the configuration itself (an unparsable server URL), thrown by every operation.
    let configurationError: KeychainError?

    // MARK: Creating a keychain

    /// A keychain of the generic passwords of `service` (`kSecClassGenericPassword`), in the default store.
    ///
    /// - Parameter service: The service, usually the app's bundle identifier, such as `"com.example.app"`.
    public init(service: String) {
        self.init(service: service, store: nil)
    }

    /// A keychain of the generic passwords of `service` (`kSecClassGenericPassword`), in `store`.
    ///
    /// - Parameters:
    ///   - service: The service, usually the app's bundle identifier, such as `"com.example.app"`.
    ///   - store: The keychain folder and the access groups to act as.
    public init(service: String, in store: KeychainStore) {
        self.init(service: service, store: store)
    }

    /// A keychain of the internet passwords of a server (`kSecClassInternetPassword`), in the default store.
    ///
    /// `server` is a host name such as `"github.com"`, or a URL such as `"https://github.com:8443/api"`, whose
    /// scheme gives the protocol (see ``KeychainInternetProtocol/init(scheme:)``), and whose host, port and path give
    /// the rest; explicit arguments win over what the URL says. A path of `"/"` counts as no path. A URL
    /// without a host makes every operation throw `KeychainError/Code/invalidParameter`.
    ///
    /// - Parameters:
    ///   - server: The host name, or a URL.
    ///   - protocol: The protocol, or `nil` for none (or the URL's scheme).
    ///   - port: The port, or `nil` for none (or the URL's port).
    ///   - path: The path, or `nil` for none (or the URL's path).
    ///   - authenticationType: The authentication type; ``KeychainAuthenticationType/default`` unless given.
    ///   - securityDomain: The security domain (an HTTP realm, for example), or `nil` for none.
    public init(
        server: String, protocol: KeychainInternetProtocol? = nil, port: Int? = nil, path: String? = nil,
        authenticationType: KeychainAuthenticationType = .default, securityDomain: String? = nil
    ) {
        self.init(
            server: server, protocol: `protocol`, port: port, path: path,
            authenticationType: authenticationType, securityDomain: securityDomain, store: nil)
    }

    /// A keychain of the internet passwords of a server (`kSecClassInternetPassword`), in `store`.
    ///
    /// The arguments are as for ``init(server:protocol:port:path:authenticationType:securityDomain:)``.
    ///
    /// - Parameters:
    ///   - server: The host name, or a URL.
    ///   - protocol: The protocol, or `nil` for none (or the URL's scheme).
    ///   - port: The port, or `nil` for none (or the URL's port).
    ///   - path: The path, or `nil` for none (or the URL's path).
    ///   - authenticationType: The authentication type; ``KeychainAuthenticationType/default`` unless given.
    ///   - securityDomain: The security domain, or `nil` for none.
    ///   - store: The keychain folder and the access groups to act as.
    public init(
        server: String, protocol: KeychainInternetProtocol? = nil, port: Int? = nil, path: String? = nil,
        authenticationType: KeychainAuthenticationType = .default, securityDomain: String? = nil,
        in store: KeychainStore
    ) {
        self.init(
            server: server, protocol: `protocol`, port: port, path: path,
            authenticationType: authenticationType, securityDomain: securityDomain, store: store)
    }

    init(service: String, store: KeychainStore?) {
        self.service = service
        server = nil
        self.protocol = nil
        port = nil
        path = nil
        authenticationType = nil
        securityDomain = nil
        self.store = store
        configurationError = nil
    }

    init(
        server: String, protocol: KeychainInternetProtocol?, port: Int?, path: String?,
        authenticationType: KeychainAuthenticationType, securityDomain: String?, store: KeychainStore?
    ) {
        var host = server
        var parsedProtocol: KeychainInternetProtocol?
        var parsedPort: Int?
        var parsedPath: String?
        var problem: KeychainError?
        if server.contains("://") {
            if let url = URLComponents(string: server), let urlHost = url.host, !urlHost.isEmpty {
                host = urlHost
                parsedProtocol = url.scheme.flatMap(KeychainInternetProtocol.init(scheme:))
                parsedPort = url.port
                parsedPath = url.path
            } else {
                problem = KeychainError(
                    code: .invalidParameter,
                    message: "The server of an internet-password Keychain is not a URL with a host. Pass a host name such as \"example.com\" or a URL such as \"https://example.com\".")
            }
        }
        if problem == nil, host.isEmpty {
            problem = KeychainError(code: .invalidParameter, message: "The server of an internet-password Keychain is empty. Pass a host name such as \"example.com\".")
        }
        let finalPort = port ?? parsedPort
        if problem == nil, let finalPort, !(0...65535).contains(finalPort) {
            problem = KeychainError(code: .invalidParameter, message: "The port of an internet-password Keychain must be between 0 and 65535.")
        }
        let finalPath = path ?? parsedPath
        self.service = nil
        self.server = host
        self.protocol = `protocol` ?? parsedProtocol
        self.port = finalPort == 0 ? nil : finalPort
        self.path = finalPath == "" || finalPath == "/" ? nil : finalPath
        self.authenticationType = authenticationType
        self.securityDomain = securityDomain == "" ? nil : securityDomain
        self.store = store
        configurationError = problem
    }

    // MARK: Options

    /// A copy of this keychain confined to `group` (`kSecAttrAccessGroup`): new items go there, and reads,
    /// removals and ``allKeys()`` see only that group. Pass `nil` to use the store's groups again.
    ///
    /// The store must be entitled to the group; otherwise operations throw `KeychainError` with status
    /// `KeychainStatus/missingEntitlement` (-34018).
    public func accessGroup(_ group: String?) -> Keychain {
        with(\.accessGroup, group)
    }

    /// A copy of this keychain that writes items with `accessibility` (`kSecAttrAccessible`), changing it on
    /// items it overwrites. Pass `nil` for Apple's default on new items and no change on existing ones.
    public func accessibility(_ accessibility: KeychainAccessibility?) -> Keychain {
        with(\.accessibility, accessibility)
    }

    /// A copy of this keychain that writes items with `accessControl` (`kSecAttrAccessControl`): reading their
    /// secret then needs what it names (the user's presence, the keychain passcode, a fingerprint, …), asked for
    /// as ``authentication`` allows. Its accessibility replaces ``accessibility`` on written items. Pass `nil` to
    /// write items without one (items it overwrites keep theirs).
    ///
    /// Apple's keychain refuses an access control with constraints on a synchronizable item: writes through a
    /// ``synchronizable(_:)`` keychain then fail with `KeychainStatus/param`.
    public func accessControl(_ accessControl: KeychainAccessControl?) -> Keychain {
        with(\.accessControl, accessControl)
    }

    /// A copy of this keychain whose calls ask for the user's presence as `authentication` says: prompt (the
    /// default), fail with `KeychainStatus/interactionNotAllowed` instead, or leave protected items out; with a
    /// prompt reason and a context whose proofs the calls share.
    ///
    /// ```swift
    /// let quiet = keychain.authentication(.failIfPrompt)
    /// let token = try quiet.string(for: "token")   // throws -25308 rather than prompting
    /// ```
    public func authentication(_ authentication: KeychainAuthentication) -> Keychain {
        with(\.authentication, authentication)
    }

    /// A copy of this keychain that works on synchronizable items (`true`) or on local items (`false`, the
    /// default), as Valet and KeychainAccess do: the two kinds never see each other, even under the same key.
    public func synchronizable(_ synchronizable: Bool) -> Keychain {
        with(\.isSynchronizable, synchronizable)
    }

    /// A copy of this keychain that gives written items `label` (`kSecAttrLabel`), the name Keychain Access
    /// shows. Pass `nil` to leave labels alone.
    public func label(_ label: String?) -> Keychain {
        with(\.label, label)
    }

    /// A copy of this keychain that gives written items `comment` (`kSecAttrComment`). Pass `nil` to leave
    /// comments alone.
    public func comment(_ comment: String?) -> Keychain {
        with(\.comment, comment)
    }

    /// A copy of this keychain that gives written items `applications` as their trusted applications: those
    /// programs may then find and read the items too (not change or remove them). An empty list removes items'
    /// lists; `nil` leaves them alone. A swift-keychain extension (macOS's `-T`), not Apple's data-protection API.
    public func trustedApplications(_ applications: [KeychainTrustedApplication]?) -> Keychain {
        with(\.trustedApplications, applications)
    }

    /// A copy with one option changed.
    private func with<Value>(_ option: WritableKeyPath<Keychain, Value>, _ value: Value) -> Keychain {
        var copy = self
        copy[keyPath: option] = value
        return copy
    }
}
