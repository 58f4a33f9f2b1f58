import Foundation
import Synchronization

/// The proofs of presence an engine holds: which factors a program proved under which authentication context,
/// until when, and the application passwords it gave. Held only in memory by whoever holds the keys (keychaind,
/// or the engine in the calling process); emptied by every lock, so no proof outlives one.
///
/// A proof is bound to the program as the kernel identified it *and* to the context: another program that learns
/// a context's identifier gains nothing, and the same program under another context is asked again.
package final class PresenceLedger: Sendable {
    /// Who proved what, under which context.
    struct Key: Hashable {
        var program: String
        var context: AuthenticationContextID
    }

    /// One context's proof.
    struct Proof {
        var factors: Set<PresenceFactor>
        var expires: Date
        /// Application passwords given under this context, by item (nil item: for the next item added).
        var applicationPasswords: [Data?: Data]
    }

    private let proofs = Mutex<[Key: Proof]>([:])
    /// At most this many contexts are remembered; the oldest expiry goes first.
    static let capacity = 1_024

    package init() {}

    /// Records that `program` proved `factors` under `context`, usable until `expires`.
    package func record(program: String, context: AuthenticationContextID, factors: Set<PresenceFactor>, expires: Date) {
        proofs.withLock { proofs in
            let key = Key(program: program, context: context)
            var proof = proofs[key] ?? Proof(factors: [], expires: expires, applicationPasswords: [:])
            proof.factors.formUnion(factors)
            proof.expires = max(proof.expires, expires)
            proofs[key] = proof
            Self.trim(&proofs)
        }
    }

    /// Records an application password `program` gave under `context` for `item` (nil: an item being added).
    package func record(program: String, context: AuthenticationContextID, applicationPassword: Data, for item: Data?, expires: Date) {
        proofs.withLock { proofs in
            let key = Key(program: program, context: context)
            var proof = proofs[key] ?? Proof(factors: [], expires: expires, applicationPasswords: [:])
            proof.applicationPasswords[item] = applicationPassword
            proof.expires = max(proof.expires, expires)
            proofs[key] = proof
            Self.trim(&proofs)
        }
    }

    /// The factors `program` has proven under `context` and not yet expired at `now`.
    package func factors(program: String, context: AuthenticationContextID, now: Date) -> Set<PresenceFactor> {
        proofs.withLock { proofs in
            let key = Key(program: program, context: context)
            guard let proof = proofs[key] else { return [] }
            guard proof.expires > now else {
                proofs[key] = nil
                return []
            }
            return proof.factors
        }
    }

    /// The application password `program` gave under `context` for `item` (or for an item being added).
    package func applicationPassword(program: String, context: AuthenticationContextID, for item: Data?, now: Date) -> Data? {
        proofs.withLock { proofs in
            let key = Key(program: program, context: context)
            guard let proof = proofs[key], proof.expires > now else { return nil }
            return proof.applicationPasswords[item]
        }
    }

    /// Forgets an application password that turned out wrong.
    package func forgetApplicationPassword(program: String, context: AuthenticationContextID, for item: Data?) {
        proofs.withLock { proofs in
            proofs[Key(program: program, context: context)]?.applicationPasswords[item] = nil
        }
    }

    /// Forgets one context's proofs (`LAContext.invalidate()`); only the program that obtained them can.
    package func invalidate(program: String, context: AuthenticationContextID) {
        proofs.withLock { proofs in proofs[Key(program: program, context: context)] = nil }
    }

    /// Forgets every proof (a lock, or `security authorize --reset`); returns how many contexts there were.
    @discardableResult
    package func removeAll() -> Int {
        proofs.withLock { proofs in
            defer { proofs.removeAll() }
            return proofs.count
        }
    }

    /// How many contexts hold a proof now.
    package var count: Int { proofs.withLock { $0.count } }

    private static func trim(_ proofs: inout [Key: Proof]) {
        guard proofs.count > capacity else { return }
        let oldest = proofs.sorted { $0.value.expires < $1.value.expires }.prefix(proofs.count - capacity)
        for (key, _) in oldest { proofs[key] = nil }
    }
}

extension PresenceConstraint {
    /// Whether `proven` factors satisfy this constraint's factors (not its application password). A proven
    /// passcode or fingerprint also proves `userPresence` (biometry or passcode); `biometryCurrentSet` also proves
    /// `biometryAny`.
    package func isSatisfied(by proven: Set<PresenceFactor>) -> Bool {
        guard !factors.isEmpty else { return true }
        let met = factors.filter { factor in
            switch factor {
            case .userPresence: !proven.isDisjoint(with: [.userPresence, .devicePasscode, .biometryAny, .biometryCurrentSet])
            case .biometryAny: !proven.isDisjoint(with: [.biometryAny, .biometryCurrentSet])
            default: proven.contains(factor)
            }
        }.count
        return met >= required
    }
}
