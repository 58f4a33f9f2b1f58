#if Network
import Crypto
import Foundation
import KeychainSyncAPI
import KeychainSyncServer
import Testing

/// Joining, approval through the device list, zone keys, and the device list's rules, against a real server.
@Suite(.needsPostgres, .timeLimit(.minutes(10)))
struct DeviceTests {
    @Test func aJoiningDeviceIsApprovedThenWritesAndFetchesItsZoneKey() async throws {
        try await TestServers.with { servers in
            let client = servers.client()
            let first = TestDevice()
            let newcomer = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: first).status == 201)

            try await join(newcomer, account: account, client: client, invitedBy: first, code: [1, 2, 3])
            // Pending: it may read its own (still missing) keys, not the device list nor the records.
            #expect(try await client.send(.GET, "/v1/accounts/\(account)/device-list", as: newcomer).status == 403)
            let noKeys = try await client.send(.GET, "/v1/accounts/\(account)/zone-keys", as: newcomer)
            #expect(try noKeys.decode(Components.Schemas.ZoneKeys.self).keys.isEmpty)
            let early = try await client.write(account, [recordWrite("x", expected: 0)], as: newcomer)
            #expect(early.status == 403 && early.errorCode == "not_trusted")
            #expect(try await client.send(.GET, "/v1/accounts/\(account)/joins", as: newcomer).status == 403)

            let joins = try await client.send(.GET, "/v1/accounts/\(account)/joins", as: first).decode(Components.Schemas.PendingDevices.self)
            #expect(joins.pending.map(\.deviceId) == [newcomer.id])
            #expect(Array(joins.pending[0].codeHash.data) == [1, 2, 3])
            #expect(joins.pending[0].device == newcomer.keys)
            #expect(joins.pending[0].expires - joins.pending[0].requested == 24 * 60 * 60 * 1000)

            // Approval: the zone key wrapped for it, then the device list naming it.
            let key = Components.Schemas.WrappedZoneKey(keyId: "zk1", recipient: newcomer.id, wrapped: .init([9, 9, 9]))
            let put = try await client.send(.PUT, "/v1/accounts/\(account)/zone-keys", json: Components.Schemas.ZoneKeys(keys: [key]), as: first)
            #expect(put.status == 204)
            let approval = try first.deviceList(version: 2, trusted: [first.id, newcomer.id])
            let approved = try await client.send(.PUT, "/v1/accounts/\(account)/device-list", json: approval, as: first)
            #expect(approved.status == 200)
            #expect(try approved.decode(Components.Schemas.DeviceList.self).trustedDeviceIds == [first.id, newcomer.id].sorted())

            let keys = try await client.send(.GET, "/v1/accounts/\(account)/zone-keys", as: newcomer).decode(Components.Schemas.ZoneKeys.self)
            #expect(keys.keys == [key])
            let mine = try await client.send(.GET, "/v1/accounts/\(account)/zone-keys", as: first).decode(Components.Schemas.ZoneKeys.self)
            #expect(mine.keys.map(\.recipient) == [first.id])
            let write = try await client.write(account, [recordWrite("from-newcomer", expected: 0)], as: newcomer)
            #expect(write.status == 200)
            let feed = try await client.changes(account, since: 0, as: first).decode(Components.Schemas.Changes.self)
            #expect(feed.records.map(\.writer) == [newcomer.id])
            #expect(
                try await client.send(.GET, "/v1/accounts/\(account)/joins", as: first)
                    .decode(Components.Schemas.PendingDevices.self).pending.isEmpty)
        }
    }

    @Test func deviceListUpdatesNeedATrustedSignerAGoodSignatureAndTheNextVersion() async throws {
        try await TestServers.with { servers in
            let client = servers.client()
            let first = TestDevice()
            let outsider = TestDevice()
            let pending = TestDevice()
            let account = newAccountID()
            #expect(try await client.createAccount(account, device: first).status == 201)
            try await join(pending, account: account, client: client, invitedBy: first)
            let path = "/v1/accounts/\(account)/device-list"

            // A non-member is not even authenticated; a pending device is not trusted.
            let byOutsider = try await client.send(.PUT, path, json: try outsider.deviceList(version: 2, trusted: [outsider.id]), as: outsider)
            #expect(byOutsider.status == 401)
            let byPending = try await client.send(.PUT, path, json: try pending.deviceList(version: 2, trusted: [first.id, pending.id]), as: pending)
            #expect(byPending.status == 403)

            // A signature that does not verify over the blob.
            var forged = try first.deviceList(version: 2, trusted: [first.id, pending.id])
            forged.deviceList = .init(Array("something else".utf8))
            let badSignature = try await client.send(.PUT, path, json: forged, as: first)
            #expect(badSignature.status == 400 && String(decoding: badSignature.body, as: UTF8.self).contains("signature"))

            // Signed by someone else than the request's signer.
            let otherSigner = try await client.send(.PUT, path, json: try pending.deviceList(version: 2, trusted: [first.id]), as: first)
            #expect(otherSigner.status == 400)

            // The wrong version: 409 with the current list.
            let stale = try await client.send(.PUT, path, json: try first.deviceList(version: 5, trusted: [first.id, pending.id]), as: first)
            #expect(stale.status == 409)
            let conflict = try stale.decode(Components.Schemas.DeviceListConflict.self)
            #expect(conflict.current.deviceListVersion == 1 && conflict.current.trustedDeviceIds == [first.id])

            // Naming a device the account does not know.
            let unknown = try await client.send(.PUT, path, json: try first.deviceList(version: 2, trusted: [first.id, outsider.id]), as: first)
            #expect(unknown.status == 400 && String(decoding: unknown.body, as: UTF8.self).contains(outsider.id))

            // Nothing changed: version 2 is still the next one.
            #expect(try await client.send(.PUT, path, json: try first.deviceList(version: 2, trusted: [first.id, pending.id]), as: first).status == 200)
        }
    }

    @Test func joinsAreBoundedAndSignedByTheKeyTheyCarry() async throws {
        try await TestServers.with { servers in
            let (client, owner, account) = try await servers.newAccount()
            for _ in 0..<16 {
                try await join(TestDevice(), account: account, client: client, invitedBy: owner)
            }
            // The seventeenth, invited too, is refused, and its invitation stays unused.
            let secret = "ABCDEFGHJKMN"
            let invited = try await client.send(
                .POST, "/v1/accounts/\(account)/invitations",
                json: Components.Schemas.Invitation(tokenHash: .init(Array(SHA256.hash(data: Array(secret.utf8)))), lifetimeSeconds: 60),
                as: owner)
            #expect(invited.status == 201)
            let seventeenth = TestDevice()
            let refused = try await client.send(
                .POST, "/v1/accounts/\(account)/joins",
                json: Components.Schemas.JoinRequest(device: seventeenth.keys, codeHash: .init([1]), invitation: secret), as: seventeenth
            )
            #expect(refused.status == 409 && refused.errorCode == "too_many_pending")
            #expect(try await servers.sqlInt("SELECT count(*) FROM invitations WHERE account_id = \(account) AND used_by IS NULL") == 1)

            // The body's key must be the signer's: a request signed by one key carrying another is refused.
            let signer = TestDevice()
            let mismatched = try await client.send(
                .POST, "/v1/accounts/\(account)/joins",
                json: Components.Schemas.JoinRequest(device: TestDevice().keys, codeHash: .init([1])), as: signer
            )
            #expect(mismatched.status == 401 && mismatched.errorCode == "device_key_mismatch")

            let noAccount = try await client.send(
                .POST, "/v1/accounts/\(newAccountID())/joins",
                json: Components.Schemas.JoinRequest(device: signer.keys, codeHash: .init([1])), as: signer
            )
            #expect(noAccount.status == 404 && noAccount.errorCode == "no_such_account")
        }
    }
}
#endif
