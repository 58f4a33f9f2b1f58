import Foundation
import KeychainCore

/// An unregistered program's private group belongs to the executable file that first used it, not to whatever file
/// comes to lie at its path.
///
/// A program is named by its path (so that it finds the same items in its own process and through keychaind). When
/// only root can change the file at that path (it and every folder above it belong to root and nobody else may
/// write them: what a package manager installs), the path is the program, and an upgrade keeps its items. When
/// anyone else can (a program in the user's home, or in a folder others may write), any program of that user
/// could put another file there, so the group is bound to the executable's contents (its SHA-256), remembered as an
/// `own-group` decision (``ConsentDecision``, listed with `security app consents`):
///
/// | the file at the path | result |
/// |---|---|
/// | only root can change it | its path's group, as always |
/// | the contents the group is bound to | its path's group |
/// | a group with no binding and no items yet | bound now, silently: there is nothing to take |
/// | other contents (rebuilt, replaced), or a group with items but no binding | the person approves (Allow once / Always, which binds these contents too) |
///
/// An approved binding is checked once per connection.
extension RequestDispatcher {
    /// The ``ConsentDecision/subject`` of a binding between an executable's contents and its path's private group.
    static let ownGroupSubject = "own-group"

    /// The access groups an item request may use: ``Authority/policy(for:claim:)``, after confirming that an
    /// unregistered program is the one its private group belongs to.
    func itemPolicy(for session: Session, claim: [String]?) throws(KeychainError) -> AccessPolicy {
        if !session.ownGroupConfirmed.withLock({ $0 }) {
            try confirmOwnGroup(session)
            session.ownGroupConfirmed.withLock { $0 = true }
        }
        return try authority.policy(for: session, claim: claim)
    }

    /// Returns when the session's program may use its private group (or has none to confirm); throws when the person
    /// refused, or could not be asked.
    func confirmOwnGroup(_ session: Session) throws(KeychainError) {
        let identity = session.identity
        guard !session.isAdminTool, let program = identity.consentProgram, case .executable(let path, _) = program,
            try session.keychain.registry().registration(for: identity) == nil,
            FileOwnership.changeableByOthers(path, owners: [0]) != nil
        else { return }
        let engine = session.engine
        let bindings = try ownGroupBindings(path, engine: engine)
        if bindings.contains(where: { $0.program == program && $0.verdict == .always }) { return }
        let action: String
        if let earlier = bindings.last(where: { $0.verdict == .always }), case .executable(_, let sha256) = earlier.program {
            action =
                "use the items stored under \(path) by the program that was there before (sha256 \(sha256.prefix(12))): "
                + "the file at that path has changed since, and any program of yours could have put it there"
        } else if bindings.isEmpty, try !holdsItems(group: path, engine: engine) {
            try engine.rememberConsent(
                ConsentDecision(
                    program: program, subject: Self.ownGroupSubject,
                    subjectDescription: "its items under \(path)", verdict: .always, date: Date()))
            logger.info("private group bound to its program's contents", metadata: ["pid": "\(identity.pid)"])
            return
        } else {
            action =
                "use the items stored under \(path), which no earlier program there was confirmed to own "
                + "(any program of yours could have put a file at that path)"
        }
        try approve(Approval(subject: Self.ownGroupSubject, action: action), session: session, engine: engine)
    }

    /// The remembered bindings of `path`'s private group (every version of the program allowed or refused it).
    func ownGroupBindings(_ path: String, engine: KeychainEngine) throws(KeychainError) -> [ConsentDecision] {
        let registry: ConsentRegistry
        do {
            registry = try engine.consentRegistry()
        } catch  where error.code == .corruptData {
            // A damaged file binds nothing; the person is asked (see KeychainEngine.rememberedConsent).
            return []
        }
        return registry.decisions.filter { $0.subject == Self.ownGroupSubject && $0.programIsNamed(path) }
    }

    /// Whether any item of any class is in `group` (any keychain of the search list, any sync state).
    func holdsItems(group: String, engine: KeychainEngine) throws(KeychainError) -> Bool {
        for itemClass in ItemClass.stored {
            var query = ItemQuery(itemClass: itemClass)
            query.attributes["agrp"] = .string(group)
            query.sync = .any
            query.authentication.ui = .skip
            query.limit = .one
            query.returns = ReturnOptions()
            query.returns.persistentRef = true
            do {
                if try !engine.findRouted(query, caller: AccessPolicy(groups: [group])).isEmpty { return true }
            } catch  where error.code == .itemNotFound {
                continue
            }
        }
        return false
    }
}
