import Foundation
import KeychainCore

// The sync request (tag 50) and its answer (tag 50): a command or reply kind byte, then its fields, in the encodings
// of WireCoding.swift. Every string has a ceiling (``SyncWireLimits``) and the device list a count ceiling, checked
// before anything is kept, so a peer cannot make the other side hold more than a few KiB for one sync message.
//
//   command: u8 kind | fields
//     1 create account: string server | string device name |     5 remove device: string device id
//       optional string account token                             6 status
//     2 join: string server | string account |                    7 now
//       optional string invitation                                8 invite
//     3 approve: string code | string device name                 9 pending
//     4 devices                                                   10 reject: string device id or code
//   reply: u8 kind | fields
//     1 account created: string account                           5 devices: u32 count | device…
//     2 join pending: string code | string fingerprint            6 removed
//     3 joined: string account                                    7 status: see below
//     4 approved: string fingerprint                              8 round: u64 applied | u64 uploaded |
//                                                                            u64 conflicts resolved | u64 rejected
//     9 invitation: string code | string uri | date expires      10 pending: u32 count | pending device…
//     11 rejected
//   pending device: string id | string code | string fingerprint | date requested
//   device: string id | string name | string fingerprint | date added | u8 this device (0 or 1)
//   status: optional string account | optional string server | optional string device | u8 joined |
//           optional date last sync | optional string last error | u64 pending changes | u64 conflicts resolved |
//           u8 push connected | optional removal | optional transfer (the round running)
//   round (8) continues: transfer
//   removal: optional date | optional string by
//   transfer: u64 received records | u64 received bytes | u64 sent records | u64 sent bytes | u64 to send
//   (a date: u64, IEEE-754 bits of seconds since 2001-01-01; counts are never negative)

/// The ceilings on what a sync message may carry, in UTF-8 bytes for strings.
package enum SyncWireLimits {
    /// A server URL.
    package static let server = 2048
    /// An account identifier, a device identifier, a join code.
    package static let identifier = 256
    /// A device's name.
    package static let deviceName = 512
    /// A key fingerprint.
    package static let fingerprint = 512
    /// Why the last round failed.
    package static let lastError = 4096
    /// The devices of one account.
    package static let devices = 1024
}

extension SyncCommand {
    /// Refuses, before it is sent, a command with a string longer than keychaind reads (``SyncWireLimits``):
    /// `errSecParam` with what to shorten, rather than a connection keychaind closes as malformed.
    package func checkWireLimits() throws(KeychainError) {
        let fields: [(value: String, limit: Int, what: String)]
        switch self {
        case .createAccount(let server, let name, let token):
            fields = [
                (server, SyncWireLimits.server, "sync server's address"), (name, SyncWireLimits.deviceName, "device name"),
                (token ?? "", SyncWireLimits.identifier, "account token"),
            ]
        case .join(let server, let account, let invitation):
            fields = [
                (server, SyncWireLimits.server, "sync server's address"), (account, SyncWireLimits.identifier, "account identifier"),
                (invitation ?? "", SyncWireLimits.identifier, "invitation"),
            ]
        case .reject(let device):
            fields = [(device, SyncWireLimits.identifier, "device identifier or code")]
        case .approve(let code, let name):
            fields = [(code, SyncWireLimits.identifier, "join code"), (name, SyncWireLimits.deviceName, "device name")]
        case .removeDevice(let id):
            fields = [(id, SyncWireLimits.identifier, "device identifier")]
        case .devices, .status, .now, .invite, .pending:
            fields = []
        }
        for field in fields where field.value.utf8.count > field.limit {
            throw KeychainError(code: .invalidParameter, message: "The \(field.what) is longer than \(field.limit) bytes; give a shorter one.")
        }
    }
}

extension BinaryWriter {
    mutating func syncCommand(_ command: SyncCommand) {
        switch command {
        case .createAccount(let server, let deviceName, let token):
            u8(1); string(server); string(deviceName)
            optional(token) { $0.string($1) }
        case .join(let server, let account, let invitation):
            u8(2); string(server); string(account)
            optional(invitation) { $0.string($1) }
        case .approve(let code, let deviceName): u8(3); string(code); string(deviceName)
        case .devices: u8(4)
        case .removeDevice(let id): u8(5); string(id)
        case .status: u8(6)
        case .now: u8(7)
        case .invite: u8(8)
        case .pending: u8(9)
        case .reject(let device): u8(10); string(device)
        }
    }

    mutating func syncReply(_ reply: SyncReply) {
        switch reply {
        case .accountCreated(let account): u8(1); string(account)
        case .joinPending(let code, let fingerprint): u8(2); string(code); string(fingerprint)
        case .joined(let account): u8(3); string(account)
        case .approved(let fingerprint): u8(4); string(fingerprint)
        case .devices(let devices):
            u8(5)
            u32(UInt32(devices.count))
            for device in devices {
                string(device.id); string(device.name); string(device.fingerprint); date(device.added); bool(device.isThisDevice)
            }
        case .removed: u8(6)
        case .status(let s):
            u8(7)
            optional(s.account) { $0.string($1) }
            optional(s.server) { $0.string($1) }
            optional(s.device) { $0.string($1) }
            bool(s.joined)
            optional(s.lastSync) { $0.date($1) }
            // A message longer than the reader takes is cut (at a character) rather than failing the whole answer.
            optional(s.lastError) { w, message in
                var cut = message.prefix(SyncWireLimits.lastError)
                while cut.utf8.count > SyncWireLimits.lastError { cut = cut.dropLast() }
                w.string(String(cut))
            }
            int(s.pendingChanges); int(s.conflictsResolved)
            bool(s.pushConnected)
            optional(s.removal) { w, removal in
                w.optional(removal.date) { $0.date($1) }
                w.optional(removal.by) { $0.string($1) }
            }
            optional(s.running) { $0.transfer($1) }
        case .round(let r):
            u8(8)
            int(r.applied); int(r.uploaded); int(r.conflictsResolved); int(r.rejected)
            transfer(r.transfer)
        case .invitation(let code, let uri, let expires):
            u8(9); string(code); string(uri); date(expires)
        case .pending(let devices):
            u8(10)
            u32(UInt32(devices.count))
            for device in devices {
                string(device.id); string(device.code); string(device.fingerprint); date(device.requested)
            }
        case .rejected: u8(11)
        }
    }

    mutating func transfer(_ t: SyncTransfer) {
        int(t.receivedRecords); int(t.receivedBytes); int(t.sentRecords); int(t.sentBytes); int(t.toSend)
    }
}

extension BinaryReader {
    /// A string of at most `limit` UTF-8 bytes.
    mutating func string(limit: Int) throws(KeychainError) -> String {
        let s = try string()
        guard s.utf8.count <= limit else { throw malformedMessage }
        return s
    }

    /// A count of things that cannot be negative.
    mutating func nonNegative() throws(KeychainError) -> Int {
        let n = try int()
        guard n >= 0 else { throw malformedMessage }
        return n
    }

    mutating func syncCommand() throws(KeychainError) -> SyncCommand {
        switch try u8() {
        case 1:
            return .createAccount(
                server: try string(limit: SyncWireLimits.server), deviceName: try string(limit: SyncWireLimits.deviceName),
                accountToken: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.identifier) })
        case 2:
            return .join(
                server: try string(limit: SyncWireLimits.server), account: try string(limit: SyncWireLimits.identifier),
                invitation: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.identifier) })
        case 3: return .approve(code: try string(limit: SyncWireLimits.identifier), deviceName: try string(limit: SyncWireLimits.deviceName))
        case 4: return .devices
        case 5: return .removeDevice(id: try string(limit: SyncWireLimits.identifier))
        case 6: return .status
        case 7: return .now
        case 8: return .invite
        case 9: return .pending
        case 10: return .reject(device: try string(limit: SyncWireLimits.identifier))
        default: throw malformedMessage
        }
    }

    mutating func syncReply() throws(KeychainError) -> SyncReply {
        switch try u8() {
        case 1: return .accountCreated(account: try string(limit: SyncWireLimits.identifier))
        case 2: return .joinPending(code: try string(limit: SyncWireLimits.identifier), fingerprint: try string(limit: SyncWireLimits.fingerprint))
        case 3: return .joined(account: try string(limit: SyncWireLimits.identifier))
        case 4: return .approved(fingerprint: try string(limit: SyncWireLimits.fingerprint))
        case 5:
            // A device takes at least 21 bytes: three lengths, a date and a flag.
            let n = try count(minimumSize: 21)
            guard n <= SyncWireLimits.devices else { throw malformedMessage }
            var devices: [SyncDeviceInfo] = []
            devices.reserveCapacity(n)
            for _ in 0..<n {
                devices.append(
                    SyncDeviceInfo(
                        id: try string(limit: SyncWireLimits.identifier), name: try string(limit: SyncWireLimits.deviceName),
                        fingerprint: try string(limit: SyncWireLimits.fingerprint), added: try date(),
                        isThisDevice: try bool()))
            }
            return .devices(devices)
        case 6: return .removed
        case 7:
            return .status(
                SyncStatusReport(
                    account: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.identifier) },
                    server: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.server) },
                    device: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.identifier) },
                    joined: try bool(),
                    lastSync: try optional { (r) throws(KeychainError) in try r.date() },
                    lastError: try optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.lastError) },
                    pendingChanges: try nonNegative(), conflictsResolved: try nonNegative(), pushConnected: try bool(),
                    removal: try optional { (r) throws(KeychainError) in
                        SyncRemoval(
                            date: try r.optional { (r) throws(KeychainError) in try r.date() },
                            by: try r.optional { (r) throws(KeychainError) in try r.string(limit: SyncWireLimits.deviceName) })
                    },
                    running: try optional { (r) throws(KeychainError) in try r.transfer() }))
        case 8:
            return .round(
                SyncRoundReport(
                    applied: try nonNegative(), uploaded: try nonNegative(),
                    conflictsResolved: try nonNegative(), rejected: try nonNegative(), transfer: try transfer()))
        case 9:
            return .invitation(code: try string(limit: SyncWireLimits.identifier), uri: try string(limit: SyncWireLimits.server), expires: try date())
        case 10:
            // A pending device takes at least 20 bytes: three lengths and a date.
            let n = try count(minimumSize: 20)
            guard n <= SyncWireLimits.devices else { throw malformedMessage }
            var devices: [SyncPendingDevice] = []
            devices.reserveCapacity(n)
            for _ in 0..<n {
                devices.append(
                    SyncPendingDevice(
                        id: try string(limit: SyncWireLimits.identifier), code: try string(limit: SyncWireLimits.identifier),
                        fingerprint: try string(limit: SyncWireLimits.fingerprint), requested: try date()))
            }
            return .pending(devices)
        case 11: return .rejected
        default: throw malformedMessage
        }
    }

    mutating func transfer() throws(KeychainError) -> SyncTransfer {
        SyncTransfer(
            receivedRecords: try nonNegative(), receivedBytes: try nonNegative(), sentRecords: try nonNegative(),
            sentBytes: try nonNegative(), toSend: try nonNegative())
    }
}
