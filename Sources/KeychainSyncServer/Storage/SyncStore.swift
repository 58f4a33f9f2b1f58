#if Network
import Foundation
import KeychainSyncAPI
import Logging
import NIOCore
import PostgresNIO

/// The sync server's storage in PostgreSQL: accounts, devices, the device list, zone keys and nonces.
///
/// Records and the change feed are in `SyncStore+Records.swift`, periodic clean-up in `SyncStore+Maintenance.swift`.
/// Everything is one query or one transaction: several server instances may share the database.
package struct SyncStore: Sendable {
    /// The database.
    package let client: PostgresClient
    /// Where queries log.
    package let logger: Logger

    /// A store on a running client.
    package init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// What the server needs to authenticate a device of an account.
    package struct DeviceCredentials: Sendable {
        /// The raw Ed25519 public key.
        package var signingKey: [UInt8]
        /// The device's state.
        package var state: DeviceState
        /// When a removed device was removed, in milliseconds since 1970.
        package var removedAtMillis: Int64? = nil
        /// The device whose list removed it.
        package var removedBy: String? = nil
    }

    /// The key and state of a device, or `nil` when the account has no such device (or its join request lapsed).
    package func credentials(account: String, device: String) async throws -> DeviceCredentials? {
        let rows = try await client.query(
            """
            SELECT signing_key, state, (extract(epoch FROM removed_at) * 1000)::bigint, removed_by FROM devices
            WHERE account_id = \(account) AND id = \(device)
              AND NOT (state = 'pending' AND requested < now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds)))
            """,
            logger: logger
        )
        for try await (key, state, removedAt, removedBy) in rows.decode((ByteBuffer, String, Int64?, String?).self) {
            guard let state = DeviceState(rawValue: state) else { return nil }
            return DeviceCredentials(signingKey: key.bytes, state: state, removedAtMillis: removedAt, removedBy: removedBy)
        }
        return nil
    }

    /// Records a nonce for a device.
    /// - Returns: `false` when the device used the nonce before (a replay).
    package func recordNonce(device: String, nonce: String) async throws -> Bool {
        let rows = try await client.query(
            """
            INSERT INTO nonces (device_id, nonce, expires_at)
            VALUES (\(device), \(nonce), now() + make_interval(secs => \(RequestSignature.nonceLifetime)))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        for try await _ in rows { return true }
        return false
    }

    /// Whether the database answers a trivial query.
    package func ping() async throws {
        try await client.query("SELECT 1", logger: logger)
    }

    // MARK: Accounts and the device list

    /// Creates an account with its first, trusted device, its device list and its first zone keys.
    /// - Returns: `false` when an account with that id exists (nothing is written).
    package func createAccount(
        id: String,
        device: StoredDevice,
        deviceList: StoredDeviceList,
        zoneKeys: [StoredZoneKey]
    ) async throws -> Bool {
        try await client.withTransaction(logger: logger) { connection in
            let created = try await connection.query(
                """
                INSERT INTO accounts (id, device_list, device_list_version, device_list_signer, device_list_signature)
                VALUES (\(id), \(ByteBuffer(bytes: deviceList.blob)), \(deviceList.version), \(deviceList.signer),
                        \(ByteBuffer(bytes: deviceList.signature)))
                ON CONFLICT (id) DO NOTHING RETURNING 1
                """,
                logger: logger
            )
            var inserted = false
            for try await _ in created { inserted = true }
            guard inserted else { return false }
            try await connection.query(
                """
                INSERT INTO devices (account_id, id, signing_key, agreement_key, state)
                VALUES (\(id), \(device.id), \(ByteBuffer(bytes: device.signingKey)), \(ByteBuffer(bytes: device.agreementKey)), 'trusted')
                """,
                logger: logger
            )
            try await Self.upsert(zoneKeys: zoneKeys, account: id, on: connection, logger: logger)
            return true
        }
    }

    /// Whether an account exists.
    package func accountExists(_ account: String) async throws -> Bool {
        for try await _ in try await client.query("SELECT 1 FROM accounts WHERE id = \(account)", logger: logger) {
            return true
        }
        return false
    }

    /// The account's current device list, or `nil` for an unknown account.
    package func deviceList(account: String) async throws -> StoredDeviceList? {
        try await client.withConnection { connection in
            try await Self.deviceList(account: account, lock: false, on: connection, logger: logger)
        }
    }

    private static func deviceList(
        account: String,
        lock: Bool,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> StoredDeviceList? {
        let query: PostgresQuery =
            lock
            ? "SELECT device_list, device_list_version, device_list_signer, device_list_signature FROM accounts WHERE id = \(account) FOR UPDATE"
            : "SELECT device_list, device_list_version, device_list_signer, device_list_signature FROM accounts WHERE id = \(account)"
        var list: StoredDeviceList?
        for try await (blob, version, signer, signature) in try await connection.query(query, logger: logger)
            .decode((ByteBuffer, Int64, String, ByteBuffer).self)
        {
            list = StoredDeviceList(blob: blob.bytes, version: version, trustedDeviceIDs: [], signer: signer, signature: signature.bytes)
        }
        guard var list else { return nil }
        for try await id in try await connection.query(
            "SELECT id FROM devices WHERE account_id = \(account) AND state = 'trusted' ORDER BY id",
            logger: logger
        ).decode(String.self) {
            list.trustedDeviceIDs.append(id)
        }
        return list
    }

    /// What became of a device-list update.
    package enum DeviceListUpdate: Sendable {
        /// The list is in force.
        case updated(StoredDeviceList)
        /// The version was not the current one + 1; the current list.
        case versionConflict(StoredDeviceList)
        /// Some ids are not trusted or pending devices of the account.
        case unknownDevices([String])
        /// No such account.
        case noSuchAccount
    }

    /// Replaces the device list if `list.version` is the current version + 1, and makes the trusted set exactly
    /// `list.trustedDeviceIDs`: named pending devices become trusted, trusted devices left out become removed.
    package func updateDeviceList(account: String, list: StoredDeviceList) async throws -> DeviceListUpdate {
        try await client.withTransaction(logger: logger) { connection in
            guard let current = try await Self.deviceList(account: account, lock: true, on: connection, logger: logger) else {
                return .noSuchAccount
            }
            guard list.version == current.version + 1 else { return .versionConflict(current) }
            var known = Set<String>()
            for try await id in try await connection.query(
                """
                SELECT id FROM devices
                WHERE account_id = \(account) AND id = ANY(\(list.trustedDeviceIDs))
                  AND (state = 'trusted'
                       OR (state = 'pending' AND requested >= now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds))))
                """,
                logger: logger
            ).decode(String.self) {
                known.insert(id)
            }
            let unknown = list.trustedDeviceIDs.filter { !known.contains($0) }
            guard unknown.isEmpty else { return .unknownDevices(unknown) }
            try await connection.query(
                """
                UPDATE accounts SET device_list = \(ByteBuffer(bytes: list.blob)), device_list_version = \(list.version),
                    device_list_signer = \(list.signer), device_list_signature = \(ByteBuffer(bytes: list.signature))
                WHERE id = \(account)
                """,
                logger: logger
            )
            try await connection.query(
                "UPDATE devices SET state = 'trusted' WHERE account_id = \(account) AND id = ANY(\(list.trustedDeviceIDs))",
                logger: logger
            )
            var removed: [String] = []
            for try await id in try await connection.query(
                """
                UPDATE devices SET state = 'removed', removed_at = now(), removed_by = \(list.signer)
                WHERE account_id = \(account) AND state = 'trusted' AND NOT (id = ANY(\(list.trustedDeviceIDs)))
                RETURNING id
                """,
                logger: logger
            ).decode(String.self) {
                removed.append(id)
            }
            // Every instance closes the removed devices' push sockets once this commits.
            for id in removed {
                try await connection.query(
                    "SELECT pg_notify(\(Self.notificationChannel), \(PushNotification.removed(account: account, device: id).payload))",
                    logger: logger
                )
            }
            var updated = list
            updated.trustedDeviceIDs = list.trustedDeviceIDs.sorted()
            return .updated(updated)
        }
    }

    // MARK: Joining

    /// What became of a join request.
    package enum JoinOutcome: Sendable {
        /// The device is pending.
        case pending(StoredDevice)
        /// The device is already trusted.
        case alreadyTrusted
        /// The device was removed; it cannot come back with the same key.
        case removed
        /// The account has the most pending devices it may have.
        case tooManyPending
        /// A new request without an unexpired, unused invitation of the account: nothing was stored.
        case invitationRequired
        /// No such account.
        case noSuchAccount
    }

    /// Makes a device pending in an account, using up the invitation whose secret hashes to `invitationHash`, or
    /// refreshes its pending request (no invitation needed then).
    package func requestJoin(account: String, device: StoredDevice, invitationHash: [UInt8]?) async throws -> JoinOutcome {
        try await client.withTransaction(logger: logger) { connection in
            var exists = false
            for try await _ in try await connection.query("SELECT 1 FROM accounts WHERE id = \(account) FOR UPDATE", logger: logger) {
                exists = true
            }
            guard exists else { return .noSuchAccount }
            var pendingAlready = false
            for try await (state, lapsed) in try await connection.query(
                """
                SELECT state, requested < now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds))
                FROM devices WHERE account_id = \(account) AND id = \(device.id)
                """,
                logger: logger
            ).decode((String, Bool).self) {
                switch DeviceState(rawValue: state) {
                case .trusted: return .alreadyTrusted
                case .removed: return .removed
                case .pending, nil: pendingAlready = !lapsed
                }
            }
            var pending = 0
            for try await count in try await connection.query(
                """
                SELECT count(*) FROM devices
                WHERE account_id = \(account) AND state = 'pending' AND id <> \(device.id)
                  AND requested >= now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds))
                """,
                logger: logger
            ).decode(Int.self) {
                pending = count
            }
            guard pending < SyncLimits.maximumPendingDevices else { return .tooManyPending }
            if !pendingAlready {
                // A new request uses up an invitation, or stores nothing.
                guard let invitationHash else { return .invitationRequired }
                var used = false
                for try await _ in try await connection.query(
                    """
                    UPDATE invitations SET used_by = \(device.id)
                    WHERE account_id = \(account) AND token_hash = \(ByteBuffer(bytes: invitationHash))
                      AND used_by IS NULL AND expires_at > now()
                    RETURNING 1
                    """,
                    logger: logger
                ) {
                    used = true
                }
                guard used else { return .invitationRequired }
            }
            var stored = device
            for try await requested in try await connection.query(
                """
                INSERT INTO devices (account_id, id, signing_key, agreement_key, state, code_hash, requested)
                VALUES (\(account), \(device.id), \(ByteBuffer(bytes: device.signingKey)), \(ByteBuffer(bytes: device.agreementKey)),
                        'pending', \(ByteBuffer(bytes: device.codeHash)), now())
                ON CONFLICT (account_id, id) DO UPDATE
                SET agreement_key = excluded.agreement_key, code_hash = excluded.code_hash, requested = now(), state = 'pending'
                RETURNING (extract(epoch FROM requested) * 1000)::bigint
                """,
                logger: logger
            ).decode(Int64.self) {
                stored.requestedMillis = requested
            }
            stored.state = .pending
            return .pending(stored)
        }
    }

    /// What became of an invitation.
    package enum InvitationOutcome: Sendable {
        /// It exists until this time, in Unix milliseconds.
        case created(expiresMillis: Int64)
        /// The account has the most unexpired invitations it may have.
        case tooMany
        /// No such account.
        case noSuchAccount
    }

    /// Records an invitation to `account` by `creator`: the hash of its secret, lasting `lifetimeSeconds`.
    package func createInvitation(account: String, tokenHash: [UInt8], creator: String, lifetimeSeconds: Int64) async throws -> InvitationOutcome {
        try await client.withTransaction(logger: logger) { connection in
            var exists = false
            for try await _ in try await connection.query("SELECT 1 FROM accounts WHERE id = \(account) FOR UPDATE", logger: logger) {
                exists = true
            }
            guard exists else { return .noSuchAccount }
            for try await count in try await connection.query(
                "SELECT count(*) FROM invitations WHERE account_id = \(account) AND expires_at > now() AND used_by IS NULL",
                logger: logger
            ).decode(Int.self) where count >= SyncLimits.maximumInvitations {
                return .tooMany
            }
            var expires: Int64 = 0
            for try await millis in try await connection.query(
                """
                INSERT INTO invitations (account_id, token_hash, created_by, expires_at)
                VALUES (\(account), \(ByteBuffer(bytes: tokenHash)), \(creator), now() + make_interval(secs => \(lifetimeSeconds)))
                ON CONFLICT (account_id, token_hash) DO NOTHING
                RETURNING (extract(epoch FROM expires_at) * 1000)::bigint
                """,
                logger: logger
            ).decode(Int64.self) {
                expires = millis
            }
            return .created(expiresMillis: expires)
        }
    }

    /// Rejects the pending device `device` of `account` for good (it becomes removed, by `rejecter`).
    /// - Returns: Whether there was such a pending device.
    package func rejectJoin(account: String, device: String, rejecter: String) async throws -> Bool {
        var rejected = false
        for try await _ in try await client.query(
            """
            UPDATE devices SET state = 'removed', removed_at = now(), removed_by = \(rejecter)
            WHERE account_id = \(account) AND id = \(device) AND state = 'pending'
            RETURNING 1
            """,
            logger: logger
        ) {
            rejected = true
        }
        return rejected
    }

    /// The account's pending devices whose requests have not lapsed, oldest first.
    package func pendingDevices(account: String) async throws -> [StoredDevice] {
        var devices: [StoredDevice] = []
        for try await (id, signingKey, agreementKey, codeHash, requested) in try await client.query(
            """
            SELECT id, signing_key, agreement_key, code_hash, (extract(epoch FROM requested) * 1000)::bigint FROM devices
            WHERE account_id = \(account) AND state = 'pending'
              AND requested >= now() - make_interval(secs => \(SyncLimits.pendingLifetimeSeconds))
            ORDER BY requested, id
            """,
            logger: logger
        ).decode((String, ByteBuffer, ByteBuffer, ByteBuffer, Int64).self) {
            devices.append(
                StoredDevice(
                    id: id, signingKey: signingKey.bytes, agreementKey: agreementKey.bytes, state: .pending,
                    codeHash: codeHash.bytes, requestedMillis: requested
                )
            )
        }
        return devices
    }

    // MARK: Zone keys

    /// Stores wrapped zone keys.
    /// - Returns: The recipients that are not trusted or pending devices of the account (nothing is stored then).
    package func putZoneKeys(account: String, keys: [StoredZoneKey]) async throws -> [String] {
        try await client.withTransaction(logger: logger) { connection in
            let recipients = Array(Set(keys.map(\.recipient)))
            var known = Set<String>()
            for try await id in try await connection.query(
                "SELECT id FROM devices WHERE account_id = \(account) AND id = ANY(\(recipients)) AND state <> 'removed'",
                logger: logger
            ).decode(String.self) {
                known.insert(id)
            }
            let unknown = recipients.filter { !known.contains($0) }.sorted()
            guard unknown.isEmpty else { return unknown }
            try await Self.upsert(zoneKeys: keys, account: account, on: connection, logger: logger)
            return []
        }
    }

    /// The zone keys wrapped for one device, by key id.
    package func zoneKeys(account: String, recipient: String) async throws -> [StoredZoneKey] {
        var keys: [StoredZoneKey] = []
        for try await (keyID, wrapped) in try await client.query(
            "SELECT key_id, wrapped FROM zone_keys WHERE account_id = \(account) AND recipient = \(recipient) ORDER BY key_id",
            logger: logger
        ).decode((String, ByteBuffer).self) {
            keys.append(StoredZoneKey(keyID: keyID, recipient: recipient, wrapped: wrapped.bytes))
        }
        return keys
    }

    private static func upsert(zoneKeys: [StoredZoneKey], account: String, on connection: PostgresConnection, logger: Logger) async throws {
        for key in zoneKeys {
            try await connection.query(
                """
                INSERT INTO zone_keys (account_id, recipient, key_id, wrapped)
                VALUES (\(account), \(key.recipient), \(key.keyID), \(ByteBuffer(bytes: key.wrapped)))
                ON CONFLICT (account_id, recipient, key_id) DO UPDATE SET wrapped = excluded.wrapped
                """,
                logger: logger
            )
        }
    }
}
#endif
