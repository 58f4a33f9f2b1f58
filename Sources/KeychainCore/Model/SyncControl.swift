import Foundation

/// What a front end asks of the keychain's sync engine (`security sync VERB`, KeychainKit's sync API), through
/// ``KeychainConnection``-style seams in process or through keychaind.
package enum SyncCommand: Sendable, Hashable {
    /// Make a new account on the server at `server` (an `http`/`https` URL) with this device, called `deviceName`,
    /// as its first device.
    case createAccount(server: String, deviceName: String)
    /// Ask to join `account` on the server at `server`; the reply carries the code to approve on a device of the
    /// account. Asked again once approved, it completes the join.
    case join(server: String, account: String)
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

    package init(applied: Int = 0, uploaded: Int = 0, conflictsResolved: Int = 0, rejected: Int = 0) {
        self.applied = applied
        self.uploaded = uploaded
        self.conflictsResolved = conflictsResolved
        self.rejected = rejected
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

    package init(
        account: String? = nil, server: String? = nil, device: String? = nil, joined: Bool = false, lastSync: Date? = nil,
        lastError: String? = nil, pendingChanges: Int = 0, conflictsResolved: Int = 0, pushConnected: Bool = false
    ) {
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
}
