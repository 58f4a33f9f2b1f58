import Foundation
import KeychainCore
import Logging

/// The process's open keychains (one engine per folder), its clients of keychaind (one per socket), and the
/// caller identities read from entitlements files, so a process opens each keychain and reads each file once.
///
/// Engines asked for with `pinned: true` stay open for the life of the process (the environment's
/// keychain); others are held weakly and close when their last user lets go.
package final class EngineRegistry: @unchecked Sendable {
    /// The process-wide registry.
    package static let shared = EngineRegistry()

    private struct WeakEngine {
        weak var engine: KeychainEngine?
    }

    private let lock = NSLock()
    private var engines: [KeychainLocation: WeakEngine] = [:]
    private var pinned: [KeychainLocation: KeychainEngine] = [:]
    private var policies: [String: AccessPolicy] = [:]
    private var clients: [String: DaemonClient] = [:]
    /// The connection the environment named last, with the variables' values it was chosen from.
    private var lastConnection: (values: EnvironmentValues, connection: any KeychainConnection)?

    func cachedConnection(for raw: [UnsafeMutablePointer<CChar>?]) -> (any KeychainConnection)? {
        lock.lock()
        defer { lock.unlock() }
        guard let last = lastConnection, last.values.matches(raw) else { return nil }
        return last.connection
    }

    func remember(_ connection: any KeychainConnection, for raw: [UnsafeMutablePointer<CChar>?]) {
        let values = EnvironmentValues(raw)
        lock.lock()
        defer { lock.unlock() }
        lastConnection = (values, connection)
    }

    /// The process's client of the daemon at `path`, created on first use: a passcode the admin tool gives on a
    /// connection stays with the calls that follow it.
    ///
    /// - Parameter autostart: How to start keychaind when nothing listens at `path`; a client made without it is
    ///   replaced by one with it the first time it is asked for.
    package func daemonClient(for path: String, autostart: DaemonAutostart? = nil) -> DaemonClient {
        lock.lock()
        defer { lock.unlock() }
        if let client = clients[path], autostart == nil || client.autostart == autostart { return client }
        let client = DaemonClient(socketPath: path, autostart: autostart)
        clients[path] = client
        return client
    }

    /// The open engine for `location`, opening it on first use (with `logger`, when given). With `createIfMissing`
    /// false, a keychain that does not exist is not created: `errSecNoSuchKeychain`.
    package func engine(
        for location: KeychainLocation, pinned pin: Bool, createIfMissing: Bool = true,
        logger: Logger? = nil
    ) throws(KeychainError) -> KeychainEngine {
        lock.lock()
        defer { lock.unlock() }
        let engine: KeychainEngine
        if let open = engines[location]?.engine {
            engine = open
        } else {
            engines = engines.filter { $0.value.engine != nil }
            engine = try KeychainEngine(location: location, createIfMissing: createIfMissing, logger: logger ?? Logger(label: "swift-keychain"), pkcs11: .shared)
            engines[location] = WeakEngine(engine: engine)
        }
        if pin { pinned[location] = engine }
        return engine
    }

    /// The caller identity the environment names (`KEYCHAIN_ENTITLEMENTS`, else the executable's name),
    /// read once per entitlements path.
    package func environmentPolicy(_ environment: [String: String] = KeychainLocation.processEnvironment()) throws(KeychainError) -> AccessPolicy {
        let key = environment["KEYCHAIN_ENTITLEMENTS"] ?? ""
        lock.lock()
        defer { lock.unlock() }
        if let cached = policies[key] { return cached }
        let policy = try AccessPolicy.fromEnvironment(environment)
        policies[key] = policy
        return policy
    }
}

/// The raw values of the variables that choose a connection (``KeychainLocation/processEnvironment()``'s), read
/// with `getenv` and compared in place, so an unchanged environment costs seven lookups and no allocation.
struct EnvironmentValues {
    /// Each variable's bytes with their terminating NUL, or nil when unset.
    var values: [[CChar]?]

    static func current() -> [UnsafeMutablePointer<CChar>?] {
        [
            getenv("KEYCHAIN_HOME"), getenv("XDG_DATA_HOME"), getenv("HOME"), getenv("KEYCHAIN_ENTITLEMENTS"),
            getenv("KEYCHAIN_DAEMON_SOCKET"), getenv("XDG_RUNTIME_DIR"), getenv("KEYCHAIN_SYSTEM_SOCKET"),
        ]
    }

    init(_ raw: [UnsafeMutablePointer<CChar>?]) {
        values = raw.map { pointer in
            pointer.map { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
        }
    }

    func matches(_ raw: [UnsafeMutablePointer<CChar>?]) -> Bool {
        guard raw.count == values.count else { return false }
        for (pointer, value) in zip(raw, values) {
            switch (pointer, value) {
            case (nil, nil): continue
            case (let p?, let v?): if strcmp(p, v) != 0 { return false }
            default: return false
            }
        }
        return true
    }
}
