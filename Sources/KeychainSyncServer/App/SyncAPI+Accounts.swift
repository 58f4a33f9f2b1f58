#if Network
import Crypto
import Foundation
import KeychainSyncAPI
import OpenAPIRuntime

extension SyncAPI {
    func createAccount(_ input: Operations.CreateAccount.Input) async throws -> Operations.CreateAccount.Output {
        guard case .json(let request) = input.body, let signer = AuthenticatedDevice.current else {
            throw SyncFailure.badRequest("Send the account as JSON.")
        }
        switch accountCreation {
        case .open: break
        case .closed:
            throw SyncFailure(
                .forbidden, "account_creation_closed", "This server creates no new accounts: ask its operator, or join an account that exists.")
        case .token(let hashes):
            guard let token = input.headers.keychainAccountToken, hashes.contains(RequestSignature.bodyHash(Array(token.utf8))) else {
                throw SyncFailure(
                    .forbidden, "account_token_required",
                    "This server creates accounts only with a token from its operator: give it to `security sync create-account --account-token-stdin`.")
            }
        }
        try RequestValidation.accountID(request.accountId)
        try RequestValidation.publicKey(request.device.signingKey, what: "device.signing_key")
        try RequestValidation.publicKey(request.device.agreementKey, what: "device.agreement_key")
        try RequestValidation.deviceList(request.deviceList)
        try RequestValidation.zoneKeys(request.zoneKeys)
        let list = request.deviceList
        guard list.deviceListVersion == 1, list.trustedDeviceIds == [signer.deviceID], list.signer == signer.deviceID else {
            throw SyncFailure.badRequest(
                "A new account's device list must be version 1, signed by the creating device, and name that device alone as trusted."
            )
        }
        try verifyDeviceListSignature(list, signingKey: signer.signingKey)
        guard request.zoneKeys.allSatisfy({ $0.recipient == signer.deviceID }) else {
            throw SyncFailure.badRequest("A new account's zone keys must be wrapped for the creating device only.")
        }
        let stored = StoredDeviceList(list)
        let created = try await store.createAccount(
            id: request.accountId,
            device: StoredDevice(
                id: signer.deviceID, signingKey: signer.signingKey, agreementKey: Array(request.device.agreementKey.data),
                state: .trusted, codeHash: [], requestedMillis: 0
            ),
            deviceList: stored,
            zoneKeys: request.zoneKeys.map(StoredZoneKey.init)
        )
        guard created else {
            return .conflict(
                .init(body: .json(.init(error: "account_exists", message: "An account with this id exists: choose a new random UUID.")))
            )
        }
        logger.info("Account created", metadata: ["account": "\(request.accountId.prefix(8))"])
        return .created(.init(body: .json(.init(stored))))
    }

    func getDeviceList(_ input: Operations.GetDeviceList.Input) async throws -> Operations.GetDeviceList.Output {
        let account = input.path.account
        // A pending device learns nothing of the others (names, keys) before it is approved.
        _ = try device(of: account, in: [.trusted])
        guard let list = try await store.deviceList(account: account) else { throw SyncFailure.noSuchAccount }
        return .ok(.init(body: .json(.init(list))))
    }

    func putDeviceList(_ input: Operations.PutDeviceList.Input) async throws -> Operations.PutDeviceList.Output {
        let account = input.path.account
        let signer = try device(of: account, in: [.trusted])
        guard case .json(let list) = input.body else { throw SyncFailure.badRequest("Send the device list as JSON.") }
        try RequestValidation.deviceList(list)
        guard list.signer == signer.deviceID else {
            throw SyncFailure.badRequest("signer must be the device that signs this request (\(signer.deviceID)).")
        }
        try verifyDeviceListSignature(list, signingKey: signer.signingKey)
        guard list.trustedDeviceIds.contains(signer.deviceID) else {
            throw SyncFailure.badRequest("A device cannot remove itself: have another trusted device sign the list without it.")
        }
        switch try await store.updateDeviceList(account: account, list: StoredDeviceList(list)) {
        case .updated(let updated):
            return .ok(.init(body: .json(.init(updated))))
        case .versionConflict(let current):
            return .conflict(
                .init(
                    body: .json(
                        .init(
                            error: "version_conflict",
                            message: "device_list_version must be \(current.version + 1): verify the current list, merge, and send it as the next version.",
                            current: .init(current)
                        )
                    )
                )
            )
        case .unknownDevices(let ids):
            throw SyncFailure.badRequest(
                "trusted_device_ids names devices that are neither trusted nor pending in this account: \(ids.joined(separator: ", ")). Approve only devices that asked to join."
            )
        case .noSuchAccount:
            throw SyncFailure.noSuchAccount
        }
    }

    func requestJoin(_ input: Operations.RequestJoin.Input) async throws -> Operations.RequestJoin.Output {
        let account = input.path.account
        guard case .json(let request) = input.body, let signer = AuthenticatedDevice.current, signer.accountID == account else {
            throw SyncFailure.badRequest("Send the join request as JSON.")
        }
        try RequestValidation.publicKey(request.device.signingKey, what: "device.signing_key")
        try RequestValidation.publicKey(request.device.agreementKey, what: "device.agreement_key")
        try RequestValidation.bytes(request.codeHash, atMost: SyncLimits.maximumCodeHashBytes, what: "code_hash", allowEmpty: false)
        if let invitation = request.invitation, invitation.isEmpty || invitation.utf8.count > SyncLimits.maximumInvitationLength {
            throw SyncFailure.badRequest("invitation must be 1 to \(SyncLimits.maximumInvitationLength) characters: the secret of an invitation.")
        }
        let device = StoredDevice(
            id: signer.deviceID, signingKey: signer.signingKey, agreementKey: Array(request.device.agreementKey.data), state: .pending,
            codeHash: Array(request.codeHash.data), requestedMillis: 0
        )
        let invitationHash = request.invitation.map { Array(SHA256.hash(data: Array($0.utf8))) }
        switch try await store.requestJoin(account: account, device: device, invitationHash: invitationHash) {
        case .invitationRequired:
            throw SyncFailure(
                .forbidden, "invitation_required",
                "Joining needs an invitation from a device of the account: run `security sync invite` there and give this device the code or URI (an invitation lasts 15 minutes and admits one device)."
            )
        case .pending(let stored):
            return .accepted(.init(body: .json(.init(stored))))
        case .alreadyTrusted:
            return .conflict(.init(body: .json(.init(error: "already_trusted", message: "This device is already trusted in the account."))))
        case .tooManyPending:
            return .conflict(
                .init(
                    body: .json(
                        .init(
                            error: "too_many_pending",
                            message: "The account has \(SyncLimits.maximumPendingDevices) devices waiting to join: approve them or wait for older requests to lapse (24 hours)."
                        )
                    )
                )
            )
        case .removed:
            throw SyncFailure.deviceRemoved
        case .noSuchAccount:
            throw SyncFailure.noSuchAccount
        }
    }

    func listJoins(_ input: Operations.ListJoins.Input) async throws -> Operations.ListJoins.Output {
        let account = input.path.account
        _ = try device(of: account, in: [.trusted])
        let pending = try await store.pendingDevices(account: account)
        return .ok(.init(body: .json(.init(pending: pending.map(Components.Schemas.PendingDevice.init)))))
    }

    func rejectJoin(_ input: Operations.RejectJoin.Input) async throws -> Operations.RejectJoin.Output {
        let account = input.path.account
        let rejecter = try device(of: account, in: [.trusted])
        guard try await store.rejectJoin(account: account, device: input.path.device, rejecter: rejecter.deviceID) else {
            return .notFound(
                .init(body: .json(.init(error: "no_such_request", message: "No device with this id is waiting to join the account (see `security sync pending`).")))
            )
        }
        return .noContent(.init())
    }

    func createInvitation(_ input: Operations.CreateInvitation.Input) async throws -> Operations.CreateInvitation.Output {
        let account = input.path.account
        let creator = try device(of: account, in: [.trusted])
        guard case .json(let body) = input.body else { throw SyncFailure.badRequest("Send the invitation as JSON.") }
        guard body.tokenHash.data.count == 32 else { throw SyncFailure.badRequest("token_hash must be the 32 bytes of a SHA-256.") }
        guard (1...SyncLimits.maximumInvitationLifetimeSeconds).contains(body.lifetimeSeconds) else {
            throw SyncFailure.badRequest("lifetime_seconds must be 1 to \(SyncLimits.maximumInvitationLifetimeSeconds).")
        }
        switch try await store.createInvitation(
            account: account, tokenHash: Array(body.tokenHash.data), creator: creator.deviceID, lifetimeSeconds: body.lifetimeSeconds)
        {
        case .created(let expires):
            return .created(.init(body: .json(.init(expires: expires))))
        case .tooMany:
            return .conflict(
                .init(
                    body: .json(
                        .init(
                            error: "too_many_invitations",
                            message: "The account has \(SyncLimits.maximumInvitations) unexpired invitations: use one, or wait until they lapse (15 minutes at most)."))))
        case .noSuchAccount:
            throw SyncFailure.noSuchAccount
        }
    }

    func putZoneKeys(_ input: Operations.PutZoneKeys.Input) async throws -> Operations.PutZoneKeys.Output {
        let account = input.path.account
        _ = try device(of: account, in: [.trusted])
        guard case .json(let body) = input.body else { throw SyncFailure.badRequest("Send the zone keys as JSON.") }
        try RequestValidation.zoneKeys(body.keys)
        let unknown = try await store.putZoneKeys(account: account, keys: body.keys.map(StoredZoneKey.init))
        guard unknown.isEmpty else {
            throw SyncFailure.badRequest(
                "These recipients are not trusted or pending devices of the account: \(unknown.joined(separator: ", "))."
            )
        }
        return .noContent(.init())
    }

    func getZoneKeys(_ input: Operations.GetZoneKeys.Input) async throws -> Operations.GetZoneKeys.Output {
        let account = input.path.account
        let requester = try device(of: account, in: [.trusted, .pending])
        let keys = try await store.zoneKeys(account: account, recipient: requester.deviceID)
        return .ok(.init(body: .json(.init(keys: keys.map(Components.Schemas.WrappedZoneKey.init)))))
    }

    /// Checks the device list's signature with the signer's key (the server's defense in depth; clients verify too).
    private func verifyDeviceListSignature(_ list: Components.Schemas.DeviceList, signingKey: [UInt8]) throws(SyncFailure) {
        guard DeviceIdentity.verify(signature: list.signature.data, of: list.deviceList.data, signingKey: signingKey) else {
            throw SyncFailure.badRequest("signature does not verify over device_list with the signer's key: sign the blob with the signer's Ed25519 key.")
        }
    }
}
#endif
