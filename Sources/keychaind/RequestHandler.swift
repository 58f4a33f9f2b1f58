import Foundation
import KeychainCore
import Logging

/// Carries out one request for one session against the engine. Runs on a worker thread: the engine's calls
/// block on SQLite and on the group commit.
struct RequestHandler: Sendable {
    let authority: Authority
    let logger: Logger
    var engine: KeychainEngine { authority.engine }

    /// The response body for a request: the result, or the error's `OSStatus`, code and message.
    func respond(_ operation: WireFrame.Operation, _ arguments: PlistValue, session: Session) -> WireFrame.Body {
        do {
            try engine.followKeybagChanges()
            let result = try perform(operation, arguments, session: session)
            return .response(status: 0, result: result)
        } catch {
            logger.debug("request failed", metadata: ["operation": "\(operation.rawValue)", "status": "\(error.status.rawValue)"])
            let failure = DaemonClient.failure(error)
            return .response(status: failure.status, result: failure.result)
        }
    }

    func perform(_ operation: WireFrame.Operation, _ arguments: PlistValue, session: Session) throws(KeychainError) -> PlistValue? {
        guard case .dictionary(let args) = arguments else {
            throw KeychainError(code: .invalidParameter, message: "A keychaind request's arguments must be a dictionary.")
        }
        switch operation {
        case .add:
            return try engine.secItemAdd(try dictionary(args, "q"), caller: policy(session, args))
        case .copyMatching:
            return try engine.secItemCopyMatching(try dictionary(args, "q"), caller: policy(session, args))
        case .update:
            try engine.secItemUpdate(try dictionary(args, "q"), attributesToUpdate: try dictionary(args, "u"), caller: policy(session, args))
            return nil
        case .delete:
            try engine.secItemDelete(try dictionary(args, "q"), caller: policy(session, args))
            return nil
        case .lock:
            engine.lock()
            logger.info("locked on request", metadata: ["pid": "\(session.identity.pid)"])
            return nil
        case .unlock:
            try engine.unlock(passcode: try string(args, "passcode"))
            if session.isAdminTool { session.markAuthenticated() }
            logger.info("unlocked", metadata: ["pid": "\(session.identity.pid)"])
            return nil
        case .setPasscode:
            try authority.requireAdmin(session, for: "change the passcode")
            let new = try optionalString(args, "new")
            try engine.changePasscode(from: try optionalString(args, "old"), to: new)
            if new != nil { session.markAuthenticated() }
            return nil
        case .backup:
            try authority.requireAdmin(session, for: "back up the keychain")
            let (data, summary) = try engine.backup(password: try string(args, "password"))
            return .dictionary(summary.wireValue.merging(["data": .data(data)]) { $1 })
        case .restore:
            try authority.requireAdmin(session, for: "restore a backup")
            guard case .data(let data)? = args["data"] else { throw KeychainError(code: .invalidParameter, message: "A restore request needs the backup's bytes.") }
            return try engine.restore(data, password: try string(args, "password")).wireValue
        case .tokenKey:
            return try engine.tokenKey(try dictionary(args, "k"), caller: policy(session, args))
        case .status:
            return status(session)
        case .appAdd:
            try authority.requireAdmin(session, for: "register programs")
            guard let entry = AppRegistration(wireValue: arguments) else {
                throw KeychainError(code: .invalidParameter, message: "An app registration needs a kind, an id, groups, and for an executable its SHA-256.")
            }
            try engine.updateAppRegistry { $0.register(entry) }
            return nil
        case .appList:
            try authority.requireAdmin(session, for: "list registered programs")
            return .array(try engine.appRegistry().entries.map(\.wireValue))
        case .appRemove:
            try authority.requireAdmin(session, for: "unregister programs")
            let name = try string(args, "id")
            let removed = try engine.updateAppRegistry { $0.remove(named: name) }
            return .int(Int64(removed))
        default:
            throw KeychainError(code: .unimplemented, message: "keychaind does not know operation \(operation.rawValue). Update the client and keychaind together.")
        }
    }

    /// What `security daemon status` shows: the daemon, the keychain, and how it sees the caller.
    func status(_ session: Session) -> PlistValue {
        var out: [String: PlistValue] = [
            "pid": .int(Int64(getpid())),
            "home": .string(engine.location.home),
            "lockState": .string(engine.lockState.wireName),
            "caller": .string(session.identity.description),
            "adminTool": .bool(session.isAdminTool),
            "transactions": .int(Int64(engine.commitStatistics.transactions)),
            "writes": .int(Int64(engine.commitStatistics.writes)),
        ]
        if session.isAdminTool {
            out["groups"] = .array([.string("*")])
        } else if let groups = try? authority.registeredGroups(session.identity) {
            out["groups"] = .array(groups.map(PlistValue.string))
        }
        return .dictionary(out)
    }

    private func policy(_ session: Session, _ args: [String: PlistValue]) throws(KeychainError) -> AccessPolicy {
        var claim: [String]?
        if let value = args["claim"] {
            guard case .array(let list) = value else { throw KeychainError(code: .invalidParameter, message: "A claim must be a list of access groups.") }
            claim = []
            for item in list {
                guard case .string(let group) = item, !group.isEmpty else {
                    throw KeychainError(code: .invalidParameter, message: "A claim must be a list of access groups.")
                }
                claim?.append(group)
            }
        }
        return try authority.policy(for: session, claim: claim)
    }

    private func dictionary(_ args: [String: PlistValue], _ key: String) throws(KeychainError) -> [String: PlistValue] {
        guard case .dictionary(let d)? = args[key] else {
            throw KeychainError(code: .invalidParameter, message: "The request is missing its '\(key)' dictionary.")
        }
        return d
    }

    private func string(_ args: [String: PlistValue], _ key: String) throws(KeychainError) -> String {
        guard case .string(let s)? = args[key] else {
            throw KeychainError(code: .invalidParameter, message: "The request is missing its '\(key)' string.")
        }
        return s
    }

    private func optionalString(_ args: [String: PlistValue], _ key: String) throws(KeychainError) -> String? {
        guard let value = args[key] else { return nil }
        guard case .string(let s) = value else {
            throw KeychainError(code: .invalidParameter, message: "The request's '\(key)' must be a string.")
        }
        return s
    }
}
