import Crypto
import Foundation

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
