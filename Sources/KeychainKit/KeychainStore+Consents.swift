import Foundation
import KeychainCore

extension KeychainStore {
    /// A remembered answer to "allow PROGRAM to use SUBJECT?": the person chose *always* or *deny* for this program
    /// and subject, and is not asked again until the decision is revoked. An answer of *once* is never remembered.
    public struct ConsentDecision: Sendable, Hashable {
        /// What the person decided.
        public enum Decision: String, Sendable, Hashable, CaseIterable {
            /// Allowed, now and later.
            case always
            /// Refused, now and later.
            case deny
        }

        /// The program the decision is for, as keychaind identified it: an executable by its path *and* SHA-256 (a
        /// changed binary is another program and is asked again), a Flatpak app by its ID, a snap by its name.
        public var program: RegisteredProgram.Program
        /// What the program was allowed or refused, as the asking component names it (an item's persistent
        /// reference in hex, a Secret Service collection's object path).
        public var subject: String
        /// The subject as the person saw it in the prompt.
        public var subjectDescription: String
        /// Always or deny.
        public var decision: Decision
        /// When the person decided.
        public var date: Date

        /// A decision as the keychain remembers it.
        public init(program: RegisteredProgram.Program, subject: String, subjectDescription: String, decision: Decision, date: Date) {
            self.program = program
            self.subject = subject
            self.subjectDescription = subjectDescription
            self.decision = decision
            self.date = date
        }

        init(_ decision: KeychainCore.ConsentDecision) {
            switch decision.program {
            case let .executable(path, sha256): program = .executable(path: path, sha256: sha256)
            case let .flatpak(id): program = .flatpak(id)
            case let .snap(name): program = .snap(name)
            }
            subject = decision.subject
            subjectDescription = decision.subjectDescription
            self.decision = decision.verdict == .always ? .always : .deny
            date = decision.date
        }
    }

    /// The programs' remembered permissions, in the order they were decided. Through keychaind only the admin tool
    /// may list them.
    ///
    /// - Throws: `KeychainError` with `errSecDecode` when the keychain's `apps.consents` was not written by it or was
    ///   changed since (its decisions are then ignored: every program is asked again); `errSecMissingEntitlement`
    ///   through keychaind for any program but its admin tool; `errSecInteractionNotAllowed` before the keychain's
    ///   first unlock.
    public func consentDecisions() throws(KeychainError) -> [ConsentDecision] {
        try connection.consents().map(ConsentDecision.init)
    }

    /// Forgets the remembered permissions of the program `name` names — an executable's path (whatever its
    /// SHA-256), a Flatpak app ID or a snap name — only those about `subject` when given. The program is asked
    /// again the next time. Returns how many decisions were forgotten (0 when none matched).
    ///
    /// - Throws: `KeychainError` as ``consentDecisions()`` does.
    @discardableResult
    public func revokeConsentDecisions(named name: String, subject: String? = nil) throws(KeychainError) -> Int {
        try connection.revokeConsents(named: name, subject: subject)
    }
}
