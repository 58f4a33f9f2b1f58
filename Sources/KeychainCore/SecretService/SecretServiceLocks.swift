import CKeychainLinux
import Foundation
import Synchronization

/// The Secret Service's locks, one per engine: the collections a client locked, and what the Secret Service still
/// knows of its items while the keychain is locked.
///
/// **Locked collections.** `Lock` of a collection while no passcode is set locks it for every caller (there are no
/// keys to drop): it stays locked until an `Unlock` whose prompt the person confirms, or `security unlock-keychain`.
/// With a passcode, `Lock` locks the keychain itself. Kept in memory: a restart of keychaind opens them again, as
/// gnome-keyring opens a keyring without a password when it starts.
///
/// **Items while locked.** Each item's identifier, label, free-form attributes and dates (never a secret), taken
/// just before a lock drops the WhenUnlocked keys, and dropped when the keychain is unlocked again.
///
/// Secret Service clients (libsecret's `secret-tool lookup`, Python's `keyring`) search first and unlock what they
/// found; gnome-keyring answers searches of a locked keyring and lists the items as locked, and the clients then
/// call `Unlock`. Our items' attributes are sealed under their class's key (WhenUnlocked), which the lock drops,
/// so this index is what lets a locked keychain answer the same way. It lives in keychaind's memory only, which
/// holds the AfterFirstUnlock keys as well: it exposes nothing that process could not read already, and nothing
/// is written anywhere. Before the first unlock there is none (the keychain was never open), and searches of a
/// locked keychain fail as before. SECURITY.md says what it exposes to programs on the bus.
///
/// The snapshot is taken only once ``SecretStore/keepIndexWhileLocked()`` asked for it (keychaind's provider):
/// a `security lock-keychain` in a process without a Secret Service pays nothing.
final class SecretServiceLocks: Sendable {
    /// Whether a lock takes a snapshot.
    let isKept = Atomic<Bool>(false)
    /// The items of each stored collection by identifier, while locked; nil while unlocked or never taken.
    let items = Mutex<[String: PackedSecretItems]?>(nil)

    /// The identifiers of the collections locked by `Lock` without a passcode.
    let collections = Mutex<Set<String>>([])

    /// Forgets the snapshot (the keychain is open again: the engine answers).
    func drop() {
        items.withLock { $0 = nil }
    }

    /// The keychain was unlocked (`security unlock-keychain`, a Secret Service unlock prompt): everything opens.
    func keychainUnlocked() {
        drop()
        collections.withLock { $0.removeAll() }
    }
}

extension SecretStore {
    /// Keeps the Secret Service's item metadata in memory across a lock, so that a locked keychain still answers
    /// searches and item properties (see ``SecretServiceLocks``). keychaind's provider calls it once.
    package func keepIndexWhileLocked() {
        engine.secretServiceLocks.isKept.store(true, ordering: .releasing)
    }

    /// Locks the collections `ids` for every caller, while no passcode is set (see ``SecretServiceLocks``).
    package func lockCollections(_ ids: some Sequence<String>) {
        engine.secretServiceLocks.collections.withLock { $0.formUnion(ids) }
    }

    /// Opens the collections `ids` again, after the person confirmed it.
    package func unlockCollections(_ ids: some Sequence<String>) {
        engine.secretServiceLocks.collections.withLock { $0.subtract(ids) }
    }

    /// Whether `Lock` locked collection `id`, and nobody unlocked it since.
    package func isLockedByClient(_ id: String) -> Bool {
        engine.secretServiceLocks.collections.withLock { $0.contains(id) }
    }

    /// Takes the snapshot of ``SecretServiceLocks``: called by the engine's `lock()` while the keys are still held.
    /// A collection that cannot be read is left out (logged); its items then answer as the engine does, locked.
    func snapshotBeforeLock() {
        let index = engine.secretServiceLocks
        guard index.isKept.load(ordering: .acquiring), engine.lockState == .unlocked else { return }
        var snapshot: [String: PackedSecretItems] = [:]
        do {
            for collection in try collections() where !inMemory(collection) {
                snapshot[collection.id] = PackedSecretItems(try items(in: collection), collection: collection.id)
            }
        } catch {
            engine.logger.warning("the Secret Service's items could not be listed before locking; a locked keychain will not answer searches", metadata: ["reason": "\(error.message)"])
            index.drop()
            return
        }
        index.items.withLock { $0 = snapshot }
        // The search's temporaries are freed: their pages go back to the kernel rather than stay with keychaind.
        _ = ckeychain_release_free_memory()
    }

    /// The snapshot's items of `collection` when the keychain is locked and there is one; nil when the engine
    /// should answer (unlocked, or no snapshot). The engine drops the snapshot wherever it takes the keys back
    /// (an unlock, a passcode change, a passcode removed by another process).
    func lockedSnapshot(of collection: SecretCollection) -> PackedSecretItems? {
        switch engine.lockState {
        case .unlocked, .noPasscode: nil
        case .locked, .beforeFirstUnlock: engine.secretServiceLocks.items.withLock { $0?[collection.id] }
        }
    }
}
