import Foundation
import KeychainCore

extension KeychainStore {
    /// A request keychaind holds until the person approves it from a terminal: a program wanted something only the
    /// person may allow (another program's secret, registering a program, changing a setting, a backup), and no
    /// prompt could ask (no display, no terminal, no pinentry).
    public struct PendingApproval: Sendable, Hashable, Identifiable {
        /// keychaind's number for it, unique while keychaind runs.
        public var id: UInt64
        /// The requesting program, as keychaind identified it (its path, pid and SHA-256; a Flatpak app ID; a snap).
        public var program: String
        /// What it wants to do, as the prompt would have said it.
        public var action: String
        /// Seconds it has waited so far.
        public var waited: Int
        /// Seconds left before it is refused.
        public var remaining: Int

        init(_ pending: KeychainCore.PendingApproval) {
            id = pending.id
            program = pending.program
            action = pending.action
            waited = pending.waited
            remaining = pending.remaining
        }
    }

    /// How the person answers a waiting request.
    public enum ApprovalAnswer: String, Sendable, Hashable, CaseIterable {
        /// Allow it this time.
        case once
        /// Allow it, and remember that for this program and this subject.
        case always
        /// Refuse it, and remember that.
        case deny
    }

    /// The requests waiting for the person's approval (none in a keychain this process opened itself).
    ///
    /// - Throws: `KeychainError` with `errSecMissingEntitlement` through keychaind for any program but its admin tool.
    public func pendingApprovals() throws(KeychainError) -> [PendingApproval] {
        try connection.pendingApprovals().map(PendingApproval.init)
    }

    /// Answers the waiting request `id`. keychaind first asks for the keychain's passcode with its own pinentry on
    /// this process's terminal (never on standard input): whoever approves must be the person, not a program.
    ///
    /// - Throws: `KeychainError` with `errSecInteractionNotAllowed` when no passcode is set (a terminal can be driven
    ///   by any program of the user, so only the passcode proves the person) or this process has no terminal;
    ///   `errSecAuthFailed` for a wrong passcode; `errSecItemNotFound` when no request `id` waits (any more).
    public func answerPendingApproval(id: UInt64, _ answer: ApprovalAnswer) throws(KeychainError) {
        let core: ConsentAnswer =
            switch answer {
            case .once: .once
            case .always: .always
            case .deny: .deny
            }
        try connection.answerPending(id: id, answer: core)
    }
}
