import Foundation
import KeychainCore

// The binary encoding of requests and responses (protocol version 2). Big-endian; every variable-length field
// has a u32 length or count, checked against the bytes left before anything is allocated. The exact bytes are
// fixed by the golden vectors in Tests/KeychainProtocolTests.
//
//   string: u32 length | UTF-8            data: u32 length | bytes           optional: u8 0 | u8 1 value
//   strings: u32 count | string…          attribute value: u8 tag (1 string, 2 data, 3 int, 4 double, 5 date) | value
//   attributes: u32 count | (u8-length code | attribute value)…, codes sorted
//   settings: optional u64 idle timeout | u8 lock on sleep | optional string pinentry program | optional u64 prompt timeout
//   query: u8-length class | attributes | u8 sync (0 local, 1 synchronizable, 2 any) | u8 limit (0 one, 1 all,
//          2 count) [| u64 count] | u8 returns (1 data, 2 attributes, 4 ref, 8 persistent ref) |
//          optional data (value) | optional persistent ref (data) | optional string (host or subdomain) |
//          u8 flags (1 match keys, 2 return keys, 4 sync given, 8 authentication follows) [| authentication]
//   item: u8-length class | data uuid | attributes | optional data | optional data (token public key) |
//         optional (data uuid | attributes | optional data | optional data)  (an identity's key)
//   program: u8 kind (1 executable | string path | string sha256, 2 flatpak | string id, 3 snap | string name)
//   consent: program | string subject | string description | u8 verdict (1 always, 2 deny) |
//            u64 date (IEEE-754 bits of seconds since 2001-01-01)
//   import batch: string collection label | u8 default | optional (date created | date modified) | u32 count |
//                 import item…
//   import item: string label | string content type | data secret | date created | date modified |
//                u32 count | (string name | string value)…, names ascending, each once
//                (a date here: u64, IEEE-754 bits of seconds since 2001-01-01)

/// Why a message does not decode: the connection that sent it is closed.
let malformedMessage = KeychainError(code: .corruptData, message: "A keychaind message is malformed; the connection is closed. Install keychaind and its clients from the same build.")

extension BinaryWriter {
    mutating func string(_ s: String) { lengthPrefixedUTF8(s) }
    mutating func bytes(_ d: Data) { lengthPrefixed(d) }
    mutating func bool(_ b: Bool) { u8(b ? 1 : 0) }
    mutating func int(_ i: Int) { u64(UInt64(bitPattern: Int64(i))) }

    mutating func optional<T>(_ value: T?, _ body: (inout BinaryWriter, T) -> Void) {
        if let value {
            u8(1)
            body(&self, value)
        } else {
            u8(0)
        }
    }

    mutating func strings(_ list: [String]) {
        u32(UInt32(list.count))
        for s in list { string(s) }
    }

    mutating func attributeValue(_ value: AttributeValue) {
        switch value {
        case .string(let s): u8(1); string(s)
        case .data(let d): u8(2); bytes(d)
        case .int(let i): u8(3); u64(UInt64(bitPattern: i))
        case .double(let d): u8(4); u64(d.bitPattern)
        case .date(let d): u8(5); u64(d.timeIntervalSinceReferenceDate.bitPattern)
        }
    }

    mutating func attributes(_ attributes: [String: AttributeValue]) {
        u32(UInt32(attributes.count))
        for (code, value) in attributes.sorted(by: { $0.key < $1.key }) {
            shortString(code)
            attributeValue(value)
        }
    }

    mutating func query(_ q: ItemQuery) {
        shortString(q.itemClass.rawValue)
        attributes(q.attributes)
        switch q.sync {
        case .local: u8(0)
        case .synchronizable: u8(1)
        case .any: u8(2)
        }
        switch q.limit {
        case .one: u8(0)
        case .all: u8(1)
        case .count(let n): u8(2); int(n)
        }
        var returns: UInt8 = 0
        if q.returns.data { returns |= 1 }
        if q.returns.attributes { returns |= 2 }
        if q.returns.ref { returns |= 4 }
        if q.returns.persistentRef { returns |= 8 }
        u8(returns)
        optional(q.valueData) { $0.bytes($1) }
        optional(q.persistentRef) { $0.bytes($1.data) }
        optional(q.hostOrSubdomain) { $0.string($1) }
        var flags: UInt8 = 0
        if q.hasMatchKeys { flags |= 1 }
        if q.hasReturnKeys { flags |= 2 }
        if q.syncGiven { flags |= 4 }
        let authenticated = q.authentication != AuthenticationOptions()
        if authenticated { flags |= 8 }
        u8(flags)
        if authenticated { authentication(q.authentication) }
    }

    mutating func changes(_ c: ItemChanges) {
        attributes(c.attributes)
        optional(c.sync) { $0.bool($1) }
        optional(c.data) { $0.bytes($1) }
    }

    mutating func item(_ item: FoundItem) {
        shortString(item.itemClass.rawValue)
        bytes(item.uuid)
        attributes(item.attributes)
        optional(item.data) { $0.bytes($1) }
        optional(item.tokenPublicKey) { $0.bytes($1) }
        optional(item.identityKey) { w, key in
            w.bytes(key.uuid)
            w.attributes(key.attributes)
            w.optional(key.data) { $0.bytes($1) }
            w.optional(key.tokenPublicKey) { $0.bytes($1) }
        }
    }

    mutating func program(_ program: AppRegistration.Program) {
        switch program {
        case let .executable(path, sha256): u8(1); string(path); string(sha256)
        case let .flatpak(id): u8(2); string(id)
        case let .snap(name): u8(3); string(name)
        }
    }

    mutating func registration(_ entry: AppRegistration) {
        program(entry.program)
        optional(entry.applicationIdentifier) { $0.string($1) }
        strings(entry.accessGroups)
    }

    mutating func consent(_ decision: ConsentDecision) {
        program(decision.program)
        string(decision.subject)
        string(decision.subjectDescription)
        switch decision.verdict {
        case .always: u8(1)
        case .deny: u8(2)
        }
        u64(decision.date.timeIntervalSinceReferenceDate.bitPattern)
    }

    mutating func date(_ d: Date) { u64(d.timeIntervalSinceReferenceDate.bitPattern) }

    mutating func dates(_ d: ItemDates) { date(d.created); date(d.modified) }

    mutating func importBatch(_ batch: SecretServiceImportBatch) {
        string(batch.collectionLabel)
        bool(batch.isDefault)
        optional(batch.collectionDates) { $0.dates($1) }
        u32(UInt32(batch.items.count))
        for item in batch.items {
            string(item.label)
            string(item.contentType)
            bytes(item.secret)
            dates(item.dates)
            u32(UInt32(item.attributes.count))
            for (name, value) in item.attributes.sorted(by: { $0.key < $1.key }) {
                string(name)
                string(value)
            }
        }
    }

    mutating func settings(_ s: KeychainSettings) {
        optional(s.idleTimeout) { $0.int($1) }
        bool(s.lockOnSleep)
        optional(s.pinentryProgram) { $0.string($1) }
        optional(s.promptTimeout) { $0.int($1) }
        optional(s.secretServiceUnregistered) { $0.string($1) }
        bool(s.syncNewItems)
    }

    mutating func lockState(_ state: LockState) {
        switch state {
        case .noPasscode: u8(0)
        case .beforeFirstUnlock: u8(1)
        case .unlocked: u8(2)
        case .locked: u8(3)
        }
    }
}

extension BinaryReader {
    mutating func string() throws(KeychainError) -> String {
        guard let s = BinaryReader.utf8String(try lengthPrefixed()) else { throw malformedMessage }
        return s
    }

    mutating func bytes() throws(KeychainError) -> Data { Data(try lengthPrefixed()) }

    mutating func bool() throws(KeychainError) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        default: throw malformedMessage
        }
    }

    mutating func int() throws(KeychainError) -> Int {
        let value = Int64(bitPattern: try u64())
        guard let n = Int(exactly: value) else { throw malformedMessage }
        return n
    }

    /// A count of elements that take at least `minimumSize` bytes each: a count the bytes left cannot hold is
    /// refused before anything is allocated.
    mutating func count(minimumSize: Int) throws(KeychainError) -> Int {
        let n = Int(try u32())
        guard n <= remaining / max(minimumSize, 1) else { throw malformedMessage }
        return n
    }

    mutating func optional<T>(_ body: (inout BinaryReader) throws(KeychainError) -> T) throws(KeychainError) -> T? {
        switch try u8() {
        case 0: return nil
        case 1: return try body(&self)
        default: throw malformedMessage
        }
    }

    mutating func strings() throws(KeychainError) -> [String] {
        let n = try count(minimumSize: 4)
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(try string()) }
        return out
    }

    mutating func attributeValue() throws(KeychainError) -> AttributeValue {
        switch try u8() {
        case 1: return .string(try string())
        case 2: return .data(try bytes())
        case 3: return .int(Int64(bitPattern: try u64()))
        case 4: return .double(Double(bitPattern: try u64()))
        case 5: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try u64())))
        default: throw malformedMessage
        }
    }

    mutating func attributes() throws(KeychainError) -> [String: AttributeValue] {
        let n = try count(minimumSize: 3)
        var out: [String: AttributeValue] = [:]
        out.reserveCapacity(n)
        for _ in 0..<n {
            let code = try shortString()
            guard out[code] == nil else { throw malformedMessage }
            out[code] = try attributeValue()
        }
        return out
    }

    mutating func itemClass() throws(KeychainError) -> ItemClass {
        guard let cls = ItemClass(rawValue: try shortString()) else { throw malformedMessage }
        return cls
    }

    mutating func query() throws(KeychainError) -> ItemQuery {
        var q = ItemQuery(itemClass: try itemClass())
        q.attributes = try attributes()
        switch try u8() {
        case 0: q.sync = .local
        case 1: q.sync = .synchronizable
        case 2: q.sync = .any
        default: throw malformedMessage
        }
        switch try u8() {
        case 0: q.limit = .one
        case 1: q.limit = .all
        case 2:
            let n = try int()
            guard n > 0 else { throw malformedMessage }
            q.limit = .count(n)
        default: throw malformedMessage
        }
        let returns = try u8()
        guard returns & ~0x0F == 0 else { throw malformedMessage }
        q.returns = ReturnOptions(data: returns & 1 != 0, attributes: returns & 2 != 0, ref: returns & 4 != 0, persistentRef: returns & 8 != 0)
        q.valueData = try optional { (r) throws(KeychainError) in try r.bytes() }
        if let raw = try optional({ (r) throws(KeychainError) in try r.bytes() }) {
            guard let reference = PersistentReference(raw) else { throw malformedMessage }
            q.persistentRef = reference
        }
        q.hostOrSubdomain = try optional { (r) throws(KeychainError) in try r.string() }
        let flags = try u8()
        guard flags & ~0x0F == 0 else { throw malformedMessage }
        q.hasMatchKeys = flags & 1 != 0
        q.hasReturnKeys = flags & 2 != 0
        q.syncGiven = flags & 4 != 0
        if flags & 8 != 0 { q.authentication = try authentication() }
        return q
    }

    mutating func changes() throws(KeychainError) -> ItemChanges {
        ItemChanges(
            attributes: try attributes(),
            sync: try optional { (r) throws(KeychainError) in try r.bool() },
            data: try optional { (r) throws(KeychainError) in try r.bytes() })
    }

    mutating func item() throws(KeychainError) -> FoundItem {
        let cls = try itemClass()
        var item = FoundItem(
            itemClass: cls, uuid: try bytes(), attributes: try attributes(),
            data: try optional { (r) throws(KeychainError) in try r.bytes() })
        item.tokenPublicKey = try optional { (r) throws(KeychainError) in try r.bytes() }
        item.identityKey = try optional { (r) throws(KeychainError) in
            FoundItem.IdentityKey(
                uuid: try r.bytes(), attributes: try r.attributes(),
                data: try r.optional { (r) throws(KeychainError) in try r.bytes() },
                tokenPublicKey: try r.optional { (r) throws(KeychainError) in try r.bytes() })
        }
        return item
    }

    mutating func program() throws(KeychainError) -> AppRegistration.Program {
        switch try u8() {
        case 1: return .executable(path: try string(), sha256: try string())
        case 2: return .flatpak(try string())
        case 3: return .snap(try string())
        default: throw malformedMessage
        }
    }

    mutating func registration() throws(KeychainError) -> AppRegistration {
        AppRegistration(
            program: try program(),
            applicationIdentifier: try optional { (r) throws(KeychainError) in try r.string() },
            accessGroups: try strings())
    }

    mutating func consent() throws(KeychainError) -> ConsentDecision {
        let identified = try program(), subject = try string(), description = try string()
        let verdict: ConsentDecision.Verdict
        switch try u8() {
        case 1: verdict = .always
        case 2: verdict = .deny
        default: throw malformedMessage
        }
        let seconds = Double(bitPattern: try u64())
        guard seconds.isFinite else { throw malformedMessage }
        return ConsentDecision(
            program: identified, subject: subject, subjectDescription: description, verdict: verdict,
            date: Date(timeIntervalSinceReferenceDate: seconds))
    }

    mutating func date() throws(KeychainError) -> Date {
        let seconds = Double(bitPattern: try u64())
        guard seconds.isFinite else { throw malformedMessage }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    mutating func dates() throws(KeychainError) -> ItemDates {
        ItemDates(created: try date(), modified: try date())
    }

    mutating func importBatch() throws(KeychainError) -> SecretServiceImportBatch {
        let label = try string(), isDefault = try bool()
        let collectionDates = try optional { (r) throws(KeychainError) in try r.dates() }
        // An item takes at least 36 bytes: three lengths, two dates and a count.
        let n = try count(minimumSize: 36)
        var items: [SecretServiceImportItem] = []
        items.reserveCapacity(n)
        for _ in 0..<n {
            let itemLabel = try string(), contentType = try string(), secret = try bytes(), dates = try dates()
            let pairs = try count(minimumSize: 8)
            var attributes: [String: String] = [:]
            var previous: String?
            for _ in 0..<pairs {
                let name = try string(), value = try string()
                // Only what the writer writes: names ascending, each once.
                if let previous, !(previous < name) { throw malformedMessage }
                previous = name
                attributes[name] = value
            }
            items.append(
                SecretServiceImportItem(
                    label: itemLabel, attributes: attributes, secret: secret,
                    contentType: contentType, dates: dates))
        }
        return SecretServiceImportBatch(collectionLabel: label, isDefault: isDefault, collectionDates: collectionDates, items: items)
    }

    mutating func settings() throws(KeychainError) -> KeychainSettings {
        KeychainSettings(
            idleTimeout: try optional { (r) throws(KeychainError) in try r.int() }, lockOnSleep: try bool(),
            pinentryProgram: try optional { (r) throws(KeychainError) in try r.string() },
            promptTimeout: try optional { (r) throws(KeychainError) in try r.int() },
            secretServiceUnregistered: try optional { (r) throws(KeychainError) in try r.string() },
            syncNewItems: try bool())
    }

    mutating func lockState() throws(KeychainError) -> LockState {
        switch try u8() {
        case 0: return .noPasscode
        case 1: return .beforeFirstUnlock
        case 2: return .unlocked
        case 3: return .locked
        default: throw malformedMessage
        }
    }
}
