import Foundation
import KeychainCore

// Each request and response is one tag byte followed by its payload (see WireCoding.swift for the field
// encodings). Tags are never reused: a new case gets a new tag, and a removed one stays retired.

extension KeychainRequest {
    func encode(into w: inout BinaryWriter) {
        func claim(_ claim: [String]?) { w.optional(claim) { $0.strings($1) } }
        switch self {
        case .add(let q, let c): w.u8(1); w.query(q); claim(c)
        case .find(let q, let c): w.u8(2); w.query(q); claim(c)
        case .update(let q, let changes, let c): w.u8(3); w.query(q); w.changes(changes); claim(c)
        case .delete(let q, let c): w.u8(4); w.query(q); claim(c)
        case .tokenKey(let request, let c, let authentication):
            // Tag 6 is tag 5 followed by the authentication options, when they are not the default.
            let authenticated = authentication != AuthenticationOptions()
            w.u8(authenticated ? 6 : 5)
            switch request {
            case .create(let q): w.u8(1); w.query(q)
            case .sign(let ref, let algorithm, let input): w.u8(2); w.bytes(ref.data); w.string(algorithm); w.bytes(input)
            case .decrypt(let ref, let algorithm, let input): w.u8(3); w.bytes(ref.data); w.string(algorithm); w.bytes(input)
            case .exchange(let ref, let algorithm, let peer, let size, let info):
                w.u8(4); w.bytes(ref.data); w.string(algorithm); w.bytes(peer); w.optional(size) { $0.int($1) }; w.bytes(info)
            }
            claim(c)
            if authenticated { w.authentication(authentication) }
        case .status: w.u8(10)
        case .lock: w.u8(11)
        case .unlock(let passcode): w.u8(12); w.string(passcode)
        case .changePasscode(let old, let new): w.u8(13); w.optional(old) { $0.string($1) }; w.optional(new) { $0.string($1) }
        case .backup(let password, let authentication):
            let authenticated = authentication != AuthenticationOptions()
            w.u8(authenticated ? 26 : 14); w.string(password)
            if authenticated { w.authentication(authentication) }
        case .restore(let data, let password): w.u8(15); w.bytes(data); w.string(password)
        case .settings: w.u8(16)
        case .setSettings(let settings): w.u8(17); w.settings(settings)
        case .registerProgram(let entry): w.u8(18); w.registration(entry)
        case .listPrograms: w.u8(19)
        case .unregisterProgram(let name): w.u8(20); w.string(name)
        case .verify: w.u8(21)
        case .authenticate(let requirement, let options): w.u8(22); w.requirement(requirement); w.authentication(options)
        case .invalidateContext(let context): w.u8(23); w.bytes(context.bytes)
        case .resetAuthorizations: w.u8(24)
        case .listConsents: w.u8(30)
        case .revokeConsents(let name, let subject): w.u8(31); w.string(name); w.optional(subject) { $0.string($1) }
        case .pendingApprovals: w.u8(32)
        case .answerPending(let id, let answer): w.u8(33); w.u64(id); w.string(answer.rawValue)
        case .importSecretServiceItems(let batch): w.u8(40); w.importBatch(batch)
        case .sync(let command): w.u8(50); w.syncCommand(command)
        case .onKeychains(let names, let request): w.u8(60); w.keychainNames(names); request.encode(into: &w)
        case .listKeychains: w.u8(61)
        case .createKeychain(let name, let passcode): w.u8(62); w.keychainName(name); w.optional(passcode) { $0.string($1) }
        case .deleteKeychain(let name): w.u8(63); w.keychainName(name)
        case .setSearchList(let names, let defaultKeychain):
            w.u8(64); w.optional(names) { $0.keychainNames($1) }; w.optional(defaultKeychain) { $0.keychainName($1) }
        }
    }

    static func decode(_ r: inout BinaryReader) throws(KeychainError) -> KeychainRequest {
        func claim(_ r: inout BinaryReader) throws(KeychainError) -> [String]? {
            try r.optional { (r) throws(KeychainError) in try r.strings() }
        }
        func reference(_ r: inout BinaryReader) throws(KeychainError) -> PersistentReference {
            guard let reference = PersistentReference(try r.bytes()) else { throw malformedMessage }
            return reference
        }
        switch try r.u8() {
        case 1: return .add(try r.query(), claim: try claim(&r))
        case 2: return .find(try r.query(), claim: try claim(&r))
        case 3: return .update(try r.query(), try r.changes(), claim: try claim(&r))
        case 4: return .delete(try r.query(), claim: try claim(&r))
        case let tag where tag == 5 || tag == 6:
            let request: TokenKeyRequest
            switch try r.u8() {
            case 1: request = .create(try r.query())
            case 2: request = .sign(reference: try reference(&r), algorithm: try r.string(), input: try r.bytes())
            case 3: request = .decrypt(reference: try reference(&r), algorithm: try r.string(), input: try r.bytes())
            case 4:
                request = .exchange(
                    reference: try reference(&r), algorithm: try r.string(), peer: try r.bytes(),
                    requestedSize: try r.optional { (r) throws(KeychainError) in try r.int() }, sharedInfo: try r.bytes())
            default: throw malformedMessage
            }
            let claimed = try claim(&r)
            return .tokenKey(request, claim: claimed, authentication: tag == 6 ? try r.authentication() : AuthenticationOptions())
        case 10: return .status
        case 11: return .lock
        case 12: return .unlock(passcode: try r.string())
        case 13:
            return .changePasscode(
                old: try r.optional { (r) throws(KeychainError) in try r.string() },
                new: try r.optional { (r) throws(KeychainError) in try r.string() })
        case 14: return .backup(password: try r.string())
        case 26: return .backup(password: try r.string(), authentication: try r.authentication())
        case 15: return .restore(try r.bytes(), password: try r.string())
        case 16: return .settings
        case 17: return .setSettings(try r.settings())
        case 18: return .registerProgram(try r.registration())
        case 19: return .listPrograms
        case 20: return .unregisterProgram(try r.string())
        case 21: return .verify
        case 22: return .authenticate(try r.requirement(), try r.authentication())
        case 23:
            guard let context = AuthenticationContextID(bytes: try r.bytes()) else { throw malformedMessage }
            return .invalidateContext(context)
        case 24: return .resetAuthorizations
        case 30: return .listConsents
        case 31: return .revokeConsents(try r.string(), subject: try r.optional { (r) throws(KeychainError) in try r.string() })
        case 32: return .pendingApprovals
        case 33:
            let id = try r.u64()
            guard let answer = ConsentAnswer(rawValue: try r.string()) else { throw malformedMessage }
            return .answerPending(id: id, answer: answer)
        case 40: return .importSecretServiceItems(try r.importBatch())
        case 50: return .sync(try r.syncCommand())
        case 60:
            let names = try r.keychainNames()
            // Refused before decoding: nested wrappers would let a peer make the decoder recurse without bound.
            guard let inner = r.nextByte, inner != 60 else { throw malformedMessage }
            return .onKeychains(names, try decode(&r))
        case 61: return .listKeychains
        case 62: return .createKeychain(try r.keychainName(), passcode: try r.optional { (r) throws(KeychainError) in try r.string() })
        case 63: return .deleteKeychain(try r.keychainName())
        case 64:
            return .setSearchList(
                try r.optional { (r) throws(KeychainError) in try r.keychainNames() },
                defaultKeychain: try r.optional { (r) throws(KeychainError) in try r.keychainName() })
        default: throw malformedMessage
        }
    }
}

extension KeychainResponse {
    func encode(into w: inout BinaryWriter) {
        switch self {
        case .done: w.u8(0)
        case .item(let item): w.u8(1); w.item(item)
        case .items(let items):
            w.u8(2)
            w.u32(UInt32(items.count))
            for item in items { w.item(item) }
        case .count(let n): w.u8(3); w.int(n)
        case .tokenKey(.key(let item)): w.u8(4); w.item(item)
        case .tokenKey(.data(let data)): w.u8(5); w.bytes(data)
        case .status(let status):
            w.u8(6)
            w.string(status.home)
            w.lockState(status.lockState)
            w.optional(status.daemon) { w, d in
                w.u32(UInt32(bitPattern: d.pid))
                w.string(d.caller)
                w.bool(d.isAdminTool)
                w.optional(d.accessGroups) { $0.strings($1) }
                w.int(d.transactions)
                w.int(d.writes)
                w.int(d.writerNanoseconds)
            }
        case .backup(let data, let summary):
            w.u8(7)
            w.bytes(data)
            w.int(summary.items); w.int(summary.thisDeviceOnly); w.int(summary.skippedPasscodeOnly)
        case .restored(let s):
            w.u8(8)
            w.int(s.added); w.int(s.replaced); w.int(s.keptNewer); w.int(s.skippedOtherDevice)
        case .settings(let settings): w.u8(9); w.optional(settings) { $0.settings($1) }
        case .programs(let entries):
            w.u8(10)
            w.u32(UInt32(entries.count))
            for entry in entries { w.registration(entry) }
        case .verification(let report):
            w.u8(11)
            w.int(report.verified); w.int(report.notChecked)
            w.u32(UInt32(report.damaged.count))
            for item in report.damaged {
                w.string(item.itemClass.rawValue)
                w.u64(UInt64(bitPattern: item.rowid))
                w.optional(item.persistentRef) { $0.bytes($1.data) }
                w.string(item.problem)
            }
        case .consents(let decisions):
            // 12-29 are left to the access-control responses.
            w.u8(30)
            w.u32(UInt32(decisions.count))
            for decision in decisions { w.consent(decision) }
        case .pendingApprovals(let pending):
            w.u8(31)
            w.u32(UInt32(pending.count))
            for p in pending { w.u64(p.id); w.string(p.program); w.string(p.action); w.int(p.waited); w.int(p.remaining) }
        case .importSummary(let s):
            w.u8(40)
            w.int(s.added); w.int(s.skipped); w.int(s.failed)
        case .sync(let reply): w.u8(50); w.syncReply(reply)
        case .keychains(let listing): w.u8(60); w.keychainListing(listing)
        case .failure(let error):
            // Tag 254: a failure followed by what each protected item needs (errSecAuthNeeded).
            w.u8(error.presenceNeeded.isEmpty ? 255 : 254)
            w.u32(UInt32(bitPattern: error.status.rawValue))
            w.string(error.code.rawValue)
            w.string(error.message)
            if !error.presenceNeeded.isEmpty {
                w.u32(UInt32(error.presenceNeeded.count))
                for requirement in error.presenceNeeded { w.requirement(requirement) }
            }
        }
    }

    static func decode(_ r: inout BinaryReader) throws(KeychainError) -> KeychainResponse {
        func count(_ r: inout BinaryReader) throws(KeychainError) -> Int {
            let n = try r.int()
            guard n >= 0 else { throw malformedMessage }
            return n
        }
        switch try r.u8() {
        case 0: return .done
        case 1: return .item(try r.item())
        case 2:
            let n = try r.count(minimumSize: 12)
            var items: [FoundItem] = []
            items.reserveCapacity(n)
            for _ in 0..<n { items.append(try r.item()) }
            return .items(items)
        case 3: return .count(try count(&r))
        case 4: return .tokenKey(.key(try r.item()))
        case 5: return .tokenKey(.data(try r.bytes()))
        case 6:
            let home = try r.string()
            let lockState = try r.lockState()
            let daemon = try r.optional { (r) throws(KeychainError) in
                ServiceStatus.DaemonDetails(
                    pid: Int32(bitPattern: try r.u32()), caller: try r.string(), isAdminTool: try r.bool(),
                    accessGroups: try r.optional { (r) throws(KeychainError) in try r.strings() },
                    transactions: try count(&r), writes: try count(&r), writerNanoseconds: try count(&r))
            }
            return .status(ServiceStatus(home: home, lockState: lockState, daemon: daemon))
        case 7:
            let data = try r.bytes()
            return .backup(data, BackupSummary(items: try count(&r), thisDeviceOnly: try count(&r), skippedPasscodeOnly: try count(&r)))
        case 8:
            return .restored(RestoreSummary(added: try count(&r), replaced: try count(&r), keptNewer: try count(&r), skippedOtherDevice: try count(&r)))
        case 9: return .settings(try r.optional { (r) throws(KeychainError) in try r.settings() })
        case 10:
            let n = try r.count(minimumSize: 6)
            var entries: [AppRegistration] = []
            for _ in 0..<n { entries.append(try r.registration()) }
            return .programs(entries)
        case 11:
            let verified = try count(&r), notChecked = try count(&r)
            let n = try r.count(minimumSize: 18)
            var damaged: [DamagedItem] = []
            for _ in 0..<n {
                guard let itemClass = ItemClass(rawValue: try r.string()), ItemClass.stored.contains(itemClass) else { throw malformedMessage }
                let rowid = Int64(bitPattern: try r.u64())
                let reference = try r.optional { (r) throws(KeychainError) in try r.bytes() }
                var persistentRef: PersistentReference?
                if let reference {
                    guard let parsed = PersistentReference(reference) else { throw malformedMessage }
                    persistentRef = parsed
                }
                damaged.append(DamagedItem(itemClass: itemClass, rowid: rowid, persistentRef: persistentRef, problem: try r.string()))
            }
            return .verification(KeychainIntegrityReport(verified: verified, notChecked: notChecked, damaged: damaged))
        case 30:
            let n = try r.count(minimumSize: 22)
            var decisions: [ConsentDecision] = []
            decisions.reserveCapacity(n)
            for _ in 0..<n { decisions.append(try r.consent()) }
            return .consents(decisions)
        case 31:
            let n = try r.count(minimumSize: 32)
            var pending: [PendingApproval] = []
            pending.reserveCapacity(n)
            for _ in 0..<n {
                pending.append(PendingApproval(id: try r.u64(), program: try r.string(), action: try r.string(), waited: try r.int(), remaining: try r.int()))
            }
            return .pendingApprovals(pending)
        case 40:
            return .importSummary(SecretServiceImportSummary(added: try count(&r), skipped: try count(&r), failed: try count(&r)))
        case 50: return .sync(try r.syncReply())
        case 60: return .keychains(try r.keychainListing())
        case let tag where tag == 255 || tag == 254:
            let status = KeychainStatus(rawValue: Int32(bitPattern: try r.u32()))
            let code = KeychainError.Code(rawValue: try r.string())
            var error = KeychainError(code: code, status: status, message: try r.string())
            if tag == 254 { error.presenceNeeded = try r.requirements() }
            return .failure(error)
        default: throw malformedMessage
        }
    }
}
