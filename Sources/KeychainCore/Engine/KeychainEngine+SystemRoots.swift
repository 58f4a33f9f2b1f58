import Foundation

extension KeychainEngine {
    /// The access group of the certificates in the SystemRoots keychain; every caller may read them.
    package static let systemRootsGroup = "com.apple.systemroots"

    /// The SystemRoots keychain of this login keychain's user: the distribution's trusted roots
    /// (``SystemRoots/snapshot(_:)``) as certificate items, in a keychain of their own beside the login keychain
    /// (`keychains/SystemRoots.keychain-db`, without a passcode: nothing in it is secret). It is built on first use
    /// and built again whenever the trust store's certificates change (its digest is kept beside it), so queries
    /// see the roots the distribution ships now.
    func systemRootsKeychain() throws(KeychainError) -> KeychainEngine {
        let snapshot = try SystemRoots.snapshot()
        return try otherKeychains.state.withLock { (state: inout OtherKeychains.State) throws(KeychainError) -> KeychainEngine in
            let target = location.location(of: .systemRoots)
            let engine: KeychainEngine
            if let open = state.engines[.systemRoots] {
                engine = open
            } else {
                try FileSystem.ensurePrivateDirectory(location.keychainsFolder)
                engine = try sibling(at: target, createIfMissing: true, named: .systemRoots)
                state.engines[.systemRoots] = engine
            }
            let digestPath = target.home + "/trust-store.sha256"
            let built = try FileSystem.read(digestPath).map { [UInt8]($0) }
            if built != snapshot.digest {
                try engine.rebuildSystemRoots(from: snapshot)
                _ = try FileSystem.writeAtomically(snapshot.digest, to: digestPath, exclusive: false)
            }
            return engine
        }
    }

    /// Replaces every certificate of this (SystemRoots) keychain with the snapshot's.
    private func rebuildSystemRoots(from snapshot: SystemRootsSnapshot) throws(KeychainError) {
        let builder = AccessPolicy.unrestricted(defaultGroup: KeychainEngine.systemRootsGroup)
        var all = ItemQuery(itemClass: .certificate)
        all.sync = .any
        all.limit = .all
        do {
            _ = try delete(all, caller: builder)
        } catch  where error.code == .itemNotFound {
            // A new keychain.
        }
        var added = 0
        for certificate in snapshot.certificates {
            // Parsed as SecItemAdd parses a certificate's DER, so the item carries what Apple derives from it.
            let query = try QueryParser.parse(
                SecItemDictionaries.withCertificateAttributes([
                    "class": .string(ItemClass.certificate.rawValue), "v_Data": .data(certificate.der),
                    "agrp": .string(KeychainEngine.systemRootsGroup),
                ]), for: .add)
            do {
                _ = try add(query, caller: builder)
                added += 1
            } catch  where error.code == .duplicateItem {
                // The trust store lists a certificate twice (same issuer and serial number).
            }
        }
        logger.info("built the SystemRoots keychain", metadata: ["certificates": "\(added)"])
    }
}
