import Foundation

/// What a front end asks of the keychain's sync engine (`security sync VERB`, KeychainKit's sync API), through
/// ``KeychainConnection``-style seams in process or through keychaind.
package enum SyncCommand: Sendable, Hashable {
    /// Make a new account on the server at `server` (an `http`/`https` URL) with this device, called `deviceName`,
    /// as its first device; `accountToken` is the operator's token when the server creates accounts by token only.
    case createAccount(server: String, deviceName: String, accountToken: String? = nil)
    /// Ask to join `account` on the server at `server` with an invitation's secret (`security sync invite` on a
    /// device of the account); the reply carries the code to approve there. Asked again once approved (no
    /// invitation needed), it completes the join.
    case join(server: String, account: String, invitation: String? = nil)
    /// Approve the device that shows `code` (ten Crockford base32 characters, a dash allowed), naming it `deviceName`.
    case approve(code: String, deviceName: String)
    /// The account's trusted devices.
    case devices
    /// Remove a device from the account (by its identifier); a new zone key seals everything written afterwards.
    case removeDevice(id: String)
    /// Where sync stands.
    case status
    /// Sync now: read the server's changes, apply them, upload local ones.
    case now
    /// Make a one-time invitation to join the account, valid 15 minutes.
    case invite
    /// The devices waiting to join.
    case pending
    /// Reject a device waiting to join, by its identifier or the code it shows.
    case reject(device: String)
}

/// A device waiting to join the account.
package struct SyncPendingDevice: Sendable, Hashable {
    /// Its identifier (32 hex digits).
    package var id: String
    /// The join code it shows.
    package var code: String
    /// Its key fingerprint.
    package var fingerprint: String
    /// When it asked.
    package var requested: Date

    package init(id: String, code: String, fingerprint: String, requested: Date) {
        self.id = id
        self.code = code
        self.fingerprint = fingerprint
        self.requested = requested
    }
}

/// One trusted device of a sync account.
package struct SyncDeviceInfo: Sendable, Hashable {
    /// Its identifier (32 hex digits).
    package var id: String
    /// The name the approving device gave it.
    package var name: String
    /// Its key fingerprint, as shown when it joined.
    package var fingerprint: String
    /// When it was added.
    package var added: Date
    /// Whether it is the device answering.
    package var isThisDevice: Bool

    package init(id: String, name: String, fingerprint: String, added: Date, isThisDevice: Bool) {
        self.id = id
        self.name = name
        self.fingerprint = fingerprint
        self.added = added
        self.isThisDevice = isThisDevice
    }
}

/// What one sync round did.
package struct SyncRoundReport: Sendable, Hashable {
    /// Incoming changes applied to the keychain.
    package var applied = 0
    /// Local changes the server took.
    package var uploaded = 0
    /// Conflicts resolved by the written rule (an incoming change that lost to a local one, or a stale write).
    package var conflictsResolved = 0
    /// Records that did not open (moved, replayed, altered, or sealed with a key this device lacks) and were ignored.
    package var rejected = 0
    /// What came from the server and went to it.
    package var transfer = SyncTransfer()

    package init(applied: Int = 0, uploaded: Int = 0, conflictsResolved: Int = 0, rejected: Int = 0, transfer: SyncTransfer = SyncTransfer()) {
        self.applied = applied
        self.uploaded = uploaded
        self.conflictsResolved = conflictsResolved
        self.rejected = rejected
        self.transfer = transfer
    }
}

/// Records and their sealed bytes, both ways, in one round so far.
package struct SyncTransfer: Sendable, Hashable {
    /// Records read from the server's change feed.
    package var receivedRecords = 0
    /// Their sealed size (ciphertext and wrapped key), in bytes.
    package var receivedBytes = 0
    /// Records the server took.
    package var sentRecords = 0
    /// Their sealed size, in bytes.
    package var sentBytes = 0
    /// The local changes the round has to send (known once it has read the feed; 0 before).
    package var toSend = 0

    package init(receivedRecords: Int = 0, receivedBytes: Int = 0, sentRecords: Int = 0, sentBytes: Int = 0, toSend: Int = 0) {
        self.receivedRecords = receivedRecords
        self.receivedBytes = receivedBytes
        self.sentRecords = sentRecords
        self.sentBytes = sentBytes
        self.toSend = toSend
    }
}

/// How this device learned it was removed from its sync account.
package struct SyncRemoval: Sendable, Hashable {
    /// When it was removed (the server's time), when the server said.
    package var date: Date?
    /// The device whose signed list left it out: its name in the last list this device trusted, else its identifier,
    /// when the server said.
    package var by: String?

    package init(date: Date? = nil, by: String? = nil) {
        self.date = date
        self.by = by
    }
}

/// Where sync stands on this device.
package struct SyncStatusReport: Sendable, Hashable {
    /// The account this keychain belongs to; nil when it is in none.
    package var account: String?
    /// The server's URL.
    package var server: String?
    /// This device's identifier.
    package var device: String?
    /// Whether this device finished joining (a device of the account approved it and it holds the zone key).
    package var joined = false
    /// When the last round ended without error.
    package var lastSync: Date?
    /// Why the last round failed, when it did (no item data).
    package var lastError: String?
    /// Local changes not yet on the server.
    package var pendingChanges = 0
    /// Conflicts resolved since the account was set up on this device.
    package var conflictsResolved = 0
    /// Whether keychaind (or this process) holds a push connection to the server now.
    package var pushConnected = false
    /// When this device was removed from the account: it no longer syncs.
    package var removal: SyncRemoval?
    /// The round running now, and how far it got.
    package var running: SyncTransfer?

    package init(
        account: String? = nil, server: String? = nil, device: String? = nil, joined: Bool = false, lastSync: Date? = nil,
        lastError: String? = nil, pendingChanges: Int = 0, conflictsResolved: Int = 0, pushConnected: Bool = false,
        removal: SyncRemoval? = nil, running: SyncTransfer? = nil
    ) {
        self.removal = removal
        self.running = running
        self.account = account
        self.server = server
        self.device = device
        self.joined = joined
        self.lastSync = lastSync
        self.lastError = lastError
        self.pendingChanges = pendingChanges
        self.conflictsResolved = conflictsResolved
        self.pushConnected = pushConnected
    }
}

/// The answer to a ``SyncCommand``.
package enum SyncReply: Sendable, Hashable {
    /// The account was made (its identifier, to give to `security sync join` on other devices).
    case accountCreated(account: String)
    /// The join is asked and waits for approval: the code to type on a device of the account, and this device's
    /// fingerprint to compare.
    case joinPending(code: String, fingerprint: String)
    /// The join is complete: this device holds the account's zone key.
    case joined(account: String)
    /// The device was approved; its fingerprint, to compare with what it shows.
    case approved(fingerprint: String)
    /// The account's trusted devices.
    case devices([SyncDeviceInfo])
    /// The device was removed.
    case removed
    /// Where sync stands.
    case status(SyncStatusReport)
    /// What the round did.
    case round(SyncRoundReport)
    /// An invitation: its code, the URI that carries it with the server and the account, and when it lapses.
    case invitation(code: String, uri: String, expires: Date)
    /// The devices waiting to join.
    case pending([SyncPendingDevice])
    /// The device was rejected.
    case rejected
}

/// The URI of an invitation to join a sync account, `keychain-sync://join?server=…&account=…&invitation=…`: what
/// `security sync invite` prints (short enough for a QR code) and `security sync join --invitation` takes.
package enum SyncInvitationURI {
    /// The URI scheme.
    package static let scheme = "keychain-sync"

    /// The URI of the invitation `code` to `account` on `server`.
    package static func make(server: String, account: String, code: String) -> String {
        var components = URLComponents()
        components.scheme = scheme
        components.host = "join"
        components.queryItems = [
            URLQueryItem(name: "server", value: server), URLQueryItem(name: "account", value: account),
            URLQueryItem(name: "invitation", value: code),
        ]
        // `+` inside the server's address is escaped so that no reader takes it for a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.string ?? ""
    }

    /// The server, account and code a URI made by ``make(server:account:code:)`` carries (the code as written, not
    /// checked here).
    /// - Throws: ``KeychainError`` `invalidParameter` when it is not such a URI.
    package static func parse(_ text: String) throws(KeychainError) -> (server: String, account: String, code: String) {
        guard let components = URLComponents(string: text), components.scheme == scheme, components.host == "join",
            let items = components.queryItems,
            let server = items.first(where: { $0.name == "server" })?.value,
            let account = items.first(where: { $0.name == "account" })?.value,
            let code = items.first(where: { $0.name == "invitation" })?.value
        else {
            throw KeychainError(
                code: .invalidParameter,
                message: "'\(text.prefix(80))' is not an invitation URI: give what `security sync invite` printed (keychain-sync://join?server=…&account=…&invitation=…).")
        }
        return (server, account, code)
    }
}
