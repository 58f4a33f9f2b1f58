import Foundation
import Synchronization

/// One change to a stored item, told to the engine's observers after it committed.
package struct ItemChange: Sendable {
    /// What happened to the item.
    package enum Kind: Sendable, Hashable {
        case added
        case updated
        case deleted
    }

    /// What happened.
    package var kind: Kind
    /// The item's class.
    package var itemClass: ItemClass
    /// The item's attributes after the change (before it, for a deletion). Decrypted: observers run in the
    /// process that holds the keys and must keep them there.
    package var attributes: [String: AttributeValue]

    /// A change.
    package init(kind: Kind, itemClass: ItemClass, attributes: [String: AttributeValue]) {
        self.kind = kind
        self.itemClass = itemClass
        self.attributes = attributes
    }
}

/// Who hears of committed changes: keychaind's Secret Service, so that an item deleted through SecItem or
/// `security` is reported on the bus as one deleted there.
final class ChangeObservers: Sendable {
    private let observers = Mutex<[@Sendable ([ItemChange]) -> Void]>([])
    /// Whether anyone listens (a change is not even assembled otherwise).
    private let any = Atomic<Bool>(false)

    func add(_ observer: @escaping @Sendable ([ItemChange]) -> Void) {
        observers.withLock { $0.append(observer) }
        any.store(true, ordering: .releasing)
    }

    var isObserved: Bool { any.load(ordering: .acquiring) }

    func notify(_ changes: @autoclosure () -> [ItemChange]) {
        guard isObserved else { return }
        let made = changes()
        guard !made.isEmpty else { return }
        for observer in observers.withLock({ $0 }) { observer(made) }
    }
}

extension KeychainEngine {
    /// Calls `observer` after every committed add, update and delete of items (from any caller of this engine),
    /// on the thread that made the change: it should hand the work off rather than block.
    package func observeChanges(_ observer: @escaping @Sendable ([ItemChange]) -> Void) {
        changeObservers.add(observer)
    }
}
