import Foundation
import KeychainCore

// The wire form of user presence (see WireCoding.swift for the primitives):
//
//   authentication: u8 ui (0 allow, 1 fail, 2 skip) | optional string operation prompt | optional data context (16) |
//                   u64 reuse duration (Double bits) | optional data application password |
//                   optional string localized reason | u8 interaction not allowed | optional data smart card PIN
//   requirement:    optional data persistent ref | string item description | u8 operation (1 decrypt, 2 sign,
//                   3 delete) | data access control (its stored form)
//
// A query carries its authentication only when it is not the default (query flag 8), so queries without it keep
// their bytes.

extension BinaryWriter {
    mutating func authentication(_ a: AuthenticationOptions) {
        switch a.ui {
        case .allow: u8(0)
        case .fail: u8(1)
        case .skip: u8(2)
        }
        optional(a.operationPrompt) { $0.string($1) }
        optional(a.context) { $0.bytes($1.bytes) }
        u64(a.reuseDuration.bitPattern)
        optional(a.applicationPassword) { $0.bytes($1) }
        optional(a.localizedReason) { $0.string($1) }
        bool(a.interactionNotAllowed)
        optional(a.smartCardPIN) { $0.bytes($1) }
    }

    mutating func requirement(_ r: PresenceRequirement) {
        optional(r.item) { $0.bytes($1.data) }
        string(r.itemDescription)
        switch r.operation {
        case .decrypt: u8(1)
        case .sign: u8(2)
        case .delete: u8(3)
        }
        bytes(r.accessControl.encoded)
    }
}

extension BinaryReader {
    mutating func authentication() throws(KeychainError) -> AuthenticationOptions {
        var a = AuthenticationOptions()
        switch try u8() {
        case 0: a.ui = .allow
        case 1: a.ui = .fail
        case 2: a.ui = .skip
        default: throw malformedMessage
        }
        a.operationPrompt = try optional { (r) throws(KeychainError) in try r.string() }
        if let raw = try optional({ (r) throws(KeychainError) in try r.bytes() }) {
            guard let context = AuthenticationContextID(bytes: raw) else { throw malformedMessage }
            a.context = context
        }
        let reuse = Double(bitPattern: try u64())
        guard reuse.isFinite, reuse >= 0 else { throw malformedMessage }
        a.reuseDuration = reuse
        a.applicationPassword = try optional { (r) throws(KeychainError) in try r.bytes() }
        a.localizedReason = try optional { (r) throws(KeychainError) in try r.string() }
        a.interactionNotAllowed = try bool()
        a.smartCardPIN = try optional { (r) throws(KeychainError) in try r.bytes() }
        return a
    }

    mutating func requirement() throws(KeychainError) -> PresenceRequirement {
        var item: PersistentReference?
        if let raw = try optional({ (r) throws(KeychainError) in try r.bytes() }) {
            guard let reference = PersistentReference(raw) else { throw malformedMessage }
            item = reference
        }
        let description = try string()
        let operation: ProtectedOperation
        switch try u8() {
        case 1: operation = .decrypt
        case 2: operation = .sign
        case 3: operation = .delete
        default: throw malformedMessage
        }
        guard let control = AccessControl(encoded: try bytes()) else { throw malformedMessage }
        return PresenceRequirement(item: item, itemDescription: description, operation: operation, accessControl: control)
    }

    mutating func requirements() throws(KeychainError) -> [PresenceRequirement] {
        let n = try count(minimumSize: 7)
        guard n <= 64 else { throw malformedMessage }
        var out: [PresenceRequirement] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try requirement()) }
        return out
    }
}
