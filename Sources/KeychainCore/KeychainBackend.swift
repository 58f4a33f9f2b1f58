import Foundation

/// Where keychain calls go: this process's own engine, or keychaind.
///
/// Both take SecItem dictionaries and give Apple's result shapes and errors; the daemon decides the caller's
/// access groups itself, from the kernel's view of the calling process.
package enum KeychainBackend: Sendable {
    /// The store opened in this process, with the caller's access groups.
    case embedded(KeychainEngine, AccessPolicy)
    /// keychaind. `claim` lists the groups the caller asks for (its entitlements file); the daemon grants
    /// them only when the caller's program is registered for them. Nil asks for all the program has.
    case daemon(DaemonClient, claim: [String]?)

    package func secItemAdd(_ attributes: [String: PlistValue]) throws(KeychainError) -> PlistValue? {
        switch self {
        case .embedded(let engine, let caller): try engine.secItemAdd(attributes, caller: caller)
        case .daemon(let client, let claim): try client.call(.add, request(["q": .dictionary(attributes)], claim))
        }
    }

    package func secItemCopyMatching(_ query: [String: PlistValue]) throws(KeychainError) -> PlistValue? {
        switch self {
        case .embedded(let engine, let caller): try engine.secItemCopyMatching(query, caller: caller)
        case .daemon(let client, let claim): try client.call(.copyMatching, request(["q": .dictionary(query)], claim))
        }
    }

    package func secItemUpdate(_ query: [String: PlistValue], attributesToUpdate: [String: PlistValue]) throws(KeychainError) {
        switch self {
        case .embedded(let engine, let caller):
            try engine.secItemUpdate(query, attributesToUpdate: attributesToUpdate, caller: caller)
        case .daemon(let client, let claim):
            _ = try client.call(.update, request(["q": .dictionary(query), "u": .dictionary(attributesToUpdate)], claim))
        }
    }

    package func secItemDelete(_ query: [String: PlistValue]) throws(KeychainError) {
        switch self {
        case .embedded(let engine, let caller): try engine.secItemDelete(query, caller: caller)
        case .daemon(let client, let claim): _ = try client.call(.delete, request(["q": .dictionary(query)], claim))
        }
    }

    /// Creates or uses a key that never leaves the keychain (see ``KeychainEngine/tokenKey(_:caller:)``): in daemon
    /// mode the private key stays in keychaind and only results cross the socket.
    package func tokenKey(_ request: [String: PlistValue]) throws(KeychainError) -> PlistValue? {
        switch self {
        case .embedded(let engine, let caller): try engine.tokenKey(request, caller: caller)
        case .daemon(let client, let claim): try client.call(.tokenKey, self.request(["k": .dictionary(request)], claim))
        }
    }

    private func request(_ arguments: [String: PlistValue], _ claim: [String]?) -> [String: PlistValue] {
        var arguments = arguments
        if let claim { arguments["claim"] = .array(claim.map(PlistValue.string)) }
        return arguments
    }
}

extension EngineRegistry {
    /// Where the environment sends SecItem calls: keychaind when `KEYCHAIN_DAEMON_SOCKET` names it or its
    /// default socket answers, else the store in `KEYCHAIN_HOME` opened here.
    ///
    /// SecItem calls ask for every call, so the answer is kept with the variables' values it came from and
    /// reused while they are unchanged (compared without copying them). Only when the default socket decides
    /// (no `KEYCHAIN_DAEMON_SOCKET`, no `KEYCHAIN_HOME`) is it worked out again each time, since keychaind may
    /// start or stop meanwhile.
    package func environmentBackend() throws(KeychainError) -> KeychainBackend {
        let values = EnvironmentValues.current()
        if let backend = cachedBackend(for: values) { return backend }
        let environment = KeychainLocation.processEnvironment()
        let backend: KeychainBackend
        var decidedBySocket = false
        if let endpoint = DaemonEndpoint.fromEnvironment(environment),
           endpoint.explicit || daemonClient(for: endpoint.path).isReachable() {
            var claim: [String]?
            if let path = environment["KEYCHAIN_ENTITLEMENTS"], !path.isEmpty {
                let policy = try environmentPolicy(environment)
                claim = policy.unrestricted ? policy.groups + ["*"] : policy.groups
            }
            backend = .daemon(daemonClient(for: endpoint.path), claim: claim)
            decidedBySocket = !endpoint.explicit
        } else {
            let (engine, caller) = try environmentContext()
            backend = .embedded(engine, caller)
            decidedBySocket = DaemonEndpoint.fromEnvironment(environment) != nil
        }
        if !decidedBySocket { remember(backend, for: values) }
        return backend
    }
}

/// The raw values of the variables that choose a backend (``KeychainLocation/processEnvironment()``'s), read
/// with `getenv` and compared in place, so an unchanged environment costs six lookups and no allocation.
struct EnvironmentValues {
    /// Each variable's bytes with their terminating NUL, or nil when unset.
    var values: [[CChar]?]

    static func current() -> [UnsafeMutablePointer<CChar>?] {
        [getenv("KEYCHAIN_HOME"), getenv("XDG_DATA_HOME"), getenv("HOME"), getenv("KEYCHAIN_ENTITLEMENTS"),
         getenv("KEYCHAIN_DAEMON_SOCKET"), getenv("XDG_RUNTIME_DIR")]
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
