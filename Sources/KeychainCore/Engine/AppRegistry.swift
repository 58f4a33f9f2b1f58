import Crypto
import Foundation

/// One program keychaind knows, and the entitlements it has: Apple's `application-identifier` and
/// `keychain-access-groups`, granted here instead of by a code signature.
package struct AppRegistration: Sendable, Hashable {
    /// How the program is recognised.
    package enum Program: Sendable, Hashable {
        /// A host executable at `path` whose contents hash to `sha256` (hex). Both must match: a changed or
        /// moved binary must be registered again.
        case executable(path: String, sha256: String)
        /// A Flatpak app ID.
        case flatpak(String)
        /// A snap name.
        case snap(String)
    }

    package var program: Program
    package var applicationIdentifier: String?
    package var accessGroups: [String]

    package init(program: Program, applicationIdentifier: String?, accessGroups: [String]) {
        self.program = program
        self.applicationIdentifier = applicationIdentifier
        self.accessGroups = accessGroups
    }

    /// The program's groups in Apple's order: `keychain-access-groups`, then `application-identifier`.
    package var groups: [String] {
        var seen = Set<String>()
        return (accessGroups + [applicationIdentifier].compactMap { $0 }).filter { seen.insert($0).inserted }
    }

    /// Whether this registration is for the same program as `other` (whatever its hash or groups).
    package func samePlace(as other: AppRegistration) -> Bool {
        switch (program, other.program) {
        case let (.executable(a, _), .executable(b, _)): a == b
        case let (.flatpak(a), .flatpak(b)): a == b
        case let (.snap(a), .snap(b)): a == b
        default: false
        }
    }

    var plist: PlistValue {
        var d: [String: PlistValue] = ["groups": .array(accessGroups.map(PlistValue.string))]
        switch program {
        case let .executable(path, sha256):
            d["kind"] = .string("executable"); d["id"] = .string(path); d["sha256"] = .string(sha256)
        case let .flatpak(id): d["kind"] = .string("flatpak"); d["id"] = .string(id)
        case let .snap(name): d["kind"] = .string("snap"); d["id"] = .string(name)
        }
        if let applicationIdentifier { d["applicationIdentifier"] = .string(applicationIdentifier) }
        return .dictionary(d)
    }

    init?(plist: PlistValue) {
        guard case .dictionary(let d) = plist, case .string(let kind)? = d["kind"], case .string(let id)? = d["id"],
              case .array(let list)? = d["groups"] else { return nil }
        var groups: [String] = []
        for case .string(let g) in list { groups.append(g) }
        switch kind {
        case "executable":
            guard case .string(let sha)? = d["sha256"] else { return nil }
            program = .executable(path: id, sha256: sha)
        case "flatpak": program = .flatpak(id)
        case "snap": program = .snap(id)
        default: return nil
        }
        if case .string(let appID)? = d["applicationIdentifier"] { applicationIdentifier = appID } else { applicationIdentifier = nil }
        accessGroups = groups
    }

    /// The registration as a property-list value (for the wire and `security app list`).
    package var wireValue: PlistValue { plist }
    /// Reads a registration sent as ``wireValue``.
    package init?(wireValue: PlistValue) { self.init(plist: wireValue) }
}

/// keychaind's registry of programs and their entitlements, kept in `apps.registry` in the keychain folder.
///
/// File, version 1: `"KCAR" | u8 version = 1 | AES-256-GCM sealed PlistCoding array` (the header is the
/// AAD). The key is derived from the AfterFirstUnlockThisDeviceOnly class key, which a passcode protects
/// when one is set: without the passcode, nobody can write a registry keychaind accepts, and a copied file
/// is useless on another machine.
package struct AppRegistry: Sendable, Hashable {
    package var entries: [AppRegistration] = []

    package init(entries: [AppRegistration] = []) { self.entries = entries }

    static let magic = Array("KCAR".utf8)
    static let version: UInt8 = 1

    /// Adds `entry`, replacing any registration of the same program.
    package mutating func register(_ entry: AppRegistration) {
        entries.removeAll { $0.samePlace(as: entry) }
        entries.append(entry)
    }

    /// Removes the registrations of the program named by `name` (a path, Flatpak ID or snap name); returns
    /// how many were removed.
    @discardableResult
    package mutating func remove(named name: String) -> Int {
        let before = entries.count
        entries.removeAll { entry in
            switch entry.program {
            case .executable(let path, _): path == name
            case .flatpak(let id): id == name
            case .snap(let snap): snap == name
            }
        }
        return before - entries.count
    }

    func encode(key: SymmetricKey, random: any RandomSource) throws(KeychainError) -> [UInt8] {
        let header = AppRegistry.magic + [AppRegistry.version]
        let body = PlistCoding.encode(.array(entries.map(\.plist)))
        return header + (try Seal.seal(body, key: key, aad: header, random: random))
    }

    static func decode(_ bytes: Data, key: SymmetricKey) throws(KeychainError) -> AppRegistry {
        let damaged = KeychainError(code: .corruptData, message: "apps.registry was not written by this keychain or is damaged. Remove it and register the apps again with `security app add`.")
        let header = magic + [version]
        guard bytes.count > header.count, Array(bytes.prefix(header.count)) == header else { throw damaged }
        let plain: [UInt8]
        do {
            plain = try Seal.open(Array(bytes.dropFirst(header.count)), key: key, aad: header)
        } catch {
            throw damaged
        }
        guard case .array(let list) = try PlistCoding.decode(plain) else { throw damaged }
        var registry = AppRegistry()
        for item in list {
            guard let entry = AppRegistration(plist: item) else { throw damaged }
            registry.entries.append(entry)
        }
        return registry
    }
}

extension KeychainLocation {
    /// keychaind's program registry.
    package var registryPath: String { home + "/apps.registry" }
}

extension KeychainEngine {
    /// The registry key, available once the AfterFirstUnlock classes are.
    func registryKey() throws(KeychainError) -> SymmetricKey {
        guard let classKey = keys.classKey(.afterFirstUnlockThisDeviceOnly) else {
            throw KeychainError(code: .interactionNotAllowed, message: "The program registry is locked until the keychain is first unlocked. Unlock it with `security unlock-keychain`.")
        }
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: classKey, salt: Array("swift-keychain app registry".utf8),
                                      info: Array("apps.registry v1".utf8), outputByteCount: 32)
    }

    /// The program registry (empty when none was written).
    package func appRegistry() throws(KeychainError) -> AppRegistry {
        guard let bytes = try FileSystem.read(location.registryPath) else { return AppRegistry() }
        return try AppRegistry.decode(bytes, key: registryKey())
    }

    /// Changes the program registry under the keychain's file lock and writes it atomically.
    @discardableResult
    package func updateAppRegistry<T>(_ change: (inout AppRegistry) throws(KeychainError) -> T) throws(KeychainError) -> T {
        let key = try registryKey()
        return try FileSystem.withExclusiveLock(location.lockPath) { () throws(KeychainError) in
            var registry = try appRegistry()
            let result = try change(&registry)
            try FileSystem.writeAtomically(registry.encode(key: key, random: random), to: location.registryPath, exclusive: false)
            logger.notice("program registry changed", metadata: ["programs": "\(registry.entries.count)"])
            return result
        }
    }
}
