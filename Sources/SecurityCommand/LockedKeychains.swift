import KeychainKit

/// Which keychain other than the login keychain a command that met `errSecInteractionNotAllowed` found locked, so
/// the tool can ask for that keychain's password rather than the login keychain's.
enum LockedKeychains {
    /// The first locked keychain among those the command named (an argument that is a keychain's name or path)
    /// and then those of the search list; nil when none is locked (the login keychain, or keychaind's admin
    /// session, is then what stopped it). SystemRoots, which has no lock, is never the answer.
    static func first(in store: KeychainStore, arguments: [String]) -> String? {
        guard let keychains = try? store.keychains() else { return nil }
        let named = Set(arguments.compactMap { argument in try? store.keychainName(argument) })
        let candidates = keychains.filter { $0.name != "login" && !$0.isReadOnly }
        let ordered = candidates.filter { named.contains($0.name) } + candidates.filter { !named.contains($0.name) && $0.isInSearchList }
        for keychain in ordered {
            let status = keychain.lockStatus ?? (try? store.keychain(named: keychain.name).lockStatus)
            if status == .locked || status == .beforeFirstUnlock { return keychain.name }
        }
        return nil
    }
}
