import Foundation
import Logging

/// The process's open keychains, one engine per folder, and the caller identities read from entitlements
/// files. Shared by Keychain Services and KeychainKit so a process opens each keychain once.
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
    /// The backend the environment named last, with the variables' values it was chosen from.
    private var lastBackend: (values: EnvironmentValues, backend: KeychainBackend)?

    func cachedBackend(for raw: [UnsafeMutablePointer<CChar>?]) -> KeychainBackend? {
        lock.lock()
        defer { lock.unlock() }
        guard let last = lastBackend, last.values.matches(raw) else { return nil }
        return last.backend
    }

    func remember(_ backend: KeychainBackend, for raw: [UnsafeMutablePointer<CChar>?]) {
        let values = EnvironmentValues(raw)
        lock.lock()
        defer { lock.unlock() }
        lastBackend = (values, backend)
    }

    /// The process's client of the daemon at `path`, created on first use.
    package func daemonClient(for path: String) -> DaemonClient {
        lock.lock()
        defer { lock.unlock() }
        if let client = clients[path] { return client }
        let client = DaemonClient(socketPath: path)
        clients[path] = client
        return client
    }

    /// The open engine for `location`, opening it on first use (with `logger`, when given).
    package func engine(for location: KeychainLocation, pinned pin: Bool, logger: Logger? = nil) throws(KeychainError) -> KeychainEngine {
        lock.lock()
        defer { lock.unlock() }
        let engine: KeychainEngine
        if let open = engines[location]?.engine {
            engine = open
        } else {
            engines = engines.filter { $0.value.engine != nil }
            engine = try KeychainEngine(location: location, logger: logger ?? Logger(label: "swift-keychain"))
            engines[location] = WeakEngine(engine: engine)
        }
        if pin { pinned[location] = engine }
        return engine
    }

    /// The keychain and caller the process environment names: what SecItem calls and KeychainKit's default
    /// store use.
    package func environmentContext() throws(KeychainError) -> (engine: KeychainEngine, caller: AccessPolicy) {
        let environment = KeychainLocation.processEnvironment()
        let engine = try engine(for: .fromEnvironment(environment), pinned: true)
        return (engine, try environmentPolicy(environment))
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
