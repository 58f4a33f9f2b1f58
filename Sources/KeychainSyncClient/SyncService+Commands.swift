#if Network
import Foundation
import KeychainCore
import KeychainSync

extension SyncService {
    /// Answers one command; serialised with background rounds (``SyncCommand/status`` excepted: it only reads, and
    /// answers even while a round waits on the network).
    ///
    /// - `createAccount`: a new account with this device; `duplicateItem` when this keychain already is in one.
    /// - `join`: asks to join and answers ``SyncReply/joinPending(code:fingerprint:)``; asked again once a device of
    ///   the account approved this one it completes the join (``SyncReply/joined(account:)``), else it answers the
    ///   same code again.
    /// - `approve`: `invalidParameter` (errSecParam) for a code not of the form XXXXX-XXXXX, `itemNotFound` for one
    ///   no waiting device shows.
    /// - `devices`, `removeDevice`, `now`: `itemNotFound` when this keychain is in no account.
    /// - `status`: a report with no account when in none.
    package func perform(_ command: SyncCommand) async throws(KeychainError) -> SyncReply {
        switch command {
        case .status:
            return .status(try status())
        case .now:
            return .round(try await round())
        case .approve(let text, let name):
            let code = try SyncJoinCode(parsing: text)
            return try await lane.run { () async throws(KeychainError) -> SyncReply in
                .approved(fingerprint: try await session().approve(code, name: name))
            }
        case .createAccount(let server, let name, let token):
            let url = try Self.serverURL(server)
            return try await lane.run { () async throws(KeychainError) -> SyncReply in try await createAccount(url, name: name, token: token) }
        case .join(let server, let account, let invitation):
            let url = try Self.serverURL(server)
            let parsed = try invitation.map { (text) throws(KeychainError) in try SyncInvitation(parsing: text) }
            return try await lane.run { () async throws(KeychainError) -> SyncReply in try await join(url, account: account, invitation: parsed) }
        case .invite:
            return try await lane.run { () async throws(KeychainError) -> SyncReply in
                let session = try session()
                if let removal = try removal(of: session) { throw Self.removedError(session, removal) }
                let made = try await session.invite()
                return .invitation(code: made.invitation.description, uri: made.uri, expires: made.expires)
            }
        case .pending:
            return try await lane.run { () async throws(KeychainError) -> SyncReply in
                let session = try session()
                if let removal = try removal(of: session) { throw Self.removedError(session, removal) }
                _ = try session.trustedList()
                return .pending(try await session.pending())
            }
        case .reject(let device):
            return try await lane.run { () async throws(KeychainError) -> SyncReply in
                let session = try session()
                if let removal = try removal(of: session) { throw Self.removedError(session, removal) }
                _ = try session.trustedList()
                try await session.reject(device)
                return .rejected
            }
        case .devices:
            return try await lane.run { () async throws(KeychainError) -> SyncReply in .devices(try await devices()) }
        case .removeDevice(let id):
            return try await lane.run { () async throws(KeychainError) -> SyncReply in
                try await session().removeDevice(id)
                return .removed
            }
        }
    }

    private func createAccount(_ url: URL, name: String, token: String?) async throws(KeychainError) -> SyncReply {
        try forgetAccountIfRemoved()
        if let current = try sessionIfAny(), isJoined(current) {
            throw KeychainError(code: .duplicateItem, message: "This keychain is already in sync account \(current.account); it syncs with that one (see `security sync status`).")
        }
        let session = try await SyncSession.createAccount(
            engine: engine, mirrorPath: mirrorPath, serverURL: url, name: name, accountToken: token, now: now)
        adopt(session)
        return .accountCreated(account: session.account)
    }

    private func join(_ url: URL, account: String, invitation: SyncInvitation?) async throws(KeychainError) -> SyncReply {
        guard !account.isEmpty, account.utf8.count <= 200 else {
            throw KeychainError(code: .invalidParameter, message: "Give the account's identifier, as `security sync create-account` or `security sync status` on a device of the account shows it.")
        }
        try forgetAccountIfRemoved()
        if let current = try sessionIfAny() {
            if isJoined(current) {
                guard current.account == account else {
                    throw KeychainError(code: .duplicateItem, message: "This keychain is already in sync account \(current.account); it cannot join another.")
                }
                return .joined(account: account)
            }
            if current.account == account, current.serverURL == url {
                // Asked again: complete the join if a device approved this one, else ask again (the request lapses
                // after a day) and show the same code.
                do {
                    if try await current.finishJoining() {
                        adopt(current)
                        return .joined(account: account)
                    }
                    do {
                        try await current.server.requestJoin(account, invitation: invitation)
                    } catch  where error.code == .duplicateItem {
                        // Approved meanwhile, its zone keys not yet given: the next ask completes it.
                    }
                } catch  where error.code == .syncDeviceRemoved {
                    // Rejected on a device of the account: recorded, so that the next join asks afresh.
                    try current.mirror.setDocument(Self.removalDocument, Self.encode(Self.removal(from: error, in: current)))
                    throw KeychainError(
                        code: .syncDeviceRemoved,
                        message:
                            "This machine's request to join was rejected on a machine of the account. To ask again (with a new device key), get a new invitation and run `security sync join --invitation URI`."
                    )
                }
                let keys = current.server.keys.publicKeys
                return .joinPending(code: keys.joinCode.description, fingerprint: keys.fingerprint)
            }
        }
        guard let invitation else {
            throw KeychainError(
                code: .invalidParameter,
                message: "Joining needs an invitation: run `security sync invite` on a machine of the account, then `security sync join --invitation URI` here.")
        }
        let joining = try await SyncSession.join(
            engine: engine, mirrorPath: mirrorPath, serverURL: url, account: account, invitation: invitation, now: now)
        state.withLock { $0.session = joining.session }
        return .joinPending(code: joining.code.description, fingerprint: joining.fingerprint)
    }

    /// When this device was removed from its account (for good: the server never takes its key back), forgets the
    /// account, the device key and the zone keys, so that it can make or join an account afresh with a new device
    /// key. Its synchronizable items stay, and go up as new ones once it syncs again (the rule settles what others
    /// hold).
    private func forgetAccountIfRemoved() throws(KeychainError) {
        guard let current = try sessionIfAny(), try removal(of: current) != nil else { return }
        try current.keyring.removeAll()
        try current.mirror.reset()
        state.withLock { state in
            state.session = nil
            state.syncing = false
        }
        logger.notice("this device was removed from its sync account and starts afresh with a new device key", metadata: ["account": "\(current.account)"])
    }

    private func devices() async throws(KeychainError) -> [SyncDeviceInfo] {
        if let session = try sessionIfAny(), let removal = try removal(of: session) { throw Self.removedError(session, removal) }
        let session = try session()
        let list: SignedSyncDeviceList
        do {
            list = try await session.refreshList()
        } catch  where error.code == .io {
            // The server cannot be reached: the list as this device last verified it.
            list = try session.trustedList()
        }
        let this = session.replica.device
        return list.list.devices.map { entry in
            SyncDeviceInfo(
                id: entry.deviceID, name: entry.name, fingerprint: entry.keys.fingerprint,
                added: Date(timeIntervalSince1970: TimeInterval(entry.added)), isThisDevice: entry.deviceID == this)
        }
    }

    /// Where sync stands. Reads only (and nothing at all when this keychain never was in an account).
    func status() throws(KeychainError) -> SyncStatusReport {
        let pushConnected = state.withLock { $0.pushConnected }
        guard let session = try sessionIfAny() else { return SyncStatusReport(pushConnected: pushConnected) }
        let mirror = session.mirror
        var report = SyncStatusReport(
            account: session.account, server: session.serverURL.absoluteString, device: session.replica.device,
            joined: isJoined(session), pushConnected: pushConnected)
        if let millis = try mirror.setting(Self.lastSyncSetting), millis > 0 {
            report.lastSync = Date(timeIntervalSince1970: TimeInterval(millis) / 1000)
        }
        if let message = try mirror.document(Self.lastErrorDocument), !message.isEmpty {
            report.lastError = String(decoding: message, as: UTF8.self)
        }
        report.conflictsResolved = Int(try mirror.setting(Self.conflictsSetting) ?? 0)
        report.removal = try removal(of: session)
        report.running = state.withLock { $0.round }
        if report.removal != nil { report.joined = false }
        // Counting reads the items: a locked keychain counts none until it is unlocked.
        report.pendingChanges = (try? session.replica.outgoingChangeCount()) ?? 0
        return report
    }

    /// The server's address as given: an `https` (or `http`, for a server on this machine or in tests) URL with a host.
    static func serverURL(_ text: String) throws(KeychainError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil
        else {
            throw KeychainError(code: .invalidParameter, message: "'\(text.prefix(200))' is not a sync server's address: give it as https://host[:port].")
        }
        return url
    }
}
#endif
