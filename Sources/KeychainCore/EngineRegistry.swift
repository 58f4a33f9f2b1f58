import Foundation

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

    /// The open engine for `location`, opening it on first use.
    package func engine(for location: KeychainLocation, pinned pin: Bool) throws(KeychainError) -> KeychainEngine {
        lock.lock()
        defer { lock.unlock() }
        let engine: KeychainEngine
        if let open = engines[location]?.engine {
            engine = open
        } else {
            engines = engines.filter { $0.value.engine != nil }
            engine = try KeychainEngine(location: location)
            engines[location] = WeakEngine(engine: engine)
        }
        if pin { pinned[location] = engine }
        return engine
    }

    /// The caller identity the environment names (`KEYCHAIN_ENTITLEMENTS`, else the executable's name),
    /// read once per entitlements path.
    package func environmentPolicy(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(KeychainError) -> AccessPolicy {
        let key = environment["KEYCHAIN_ENTITLEMENTS"] ?? ""
        lock.lock()
        defer { lock.unlock() }
        if let cached = policies[key] { return cached }
        let policy = try AccessPolicy.fromEnvironment(environment)
        policies[key] = policy
        return policy
    }
}
