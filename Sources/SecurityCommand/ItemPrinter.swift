import Foundation
import KeychainKit

/// Prints keychain items the way macOS's `security` tool does (`print_keychain_item_attributes` and
/// `print_buffer` in Apple's `keychain_utilities.c`), so scripts written against macOS parse our output.
enum ItemPrinter {
    /// How macOS declares an attribute's value in the listing.
    enum Format: String {
        case blob = "<blob>"
        case uint32 = "<uint32>"
        case sint32 = "<sint32>"
        case timedate = "<timedate>"
    }

    /// One line of the listing: the CSSM tag (a number or a four-character code), our attribute code, the format.
    struct Field: Equatable {
        let tag: UInt32
        let code: String
        let format: Format

        init(_ tag: UInt32, _ code: String, _ format: Format) {
            self.tag = tag
            self.code = code
            self.format = format
        }

        init(_ code: String, _ format: Format) {
            self.init(ItemPrinter.fourCharCode(code), code, format)
        }
    }

    /// macOS's attribute list for generic passwords, in its order. `0x00000007` is the label (CSSM's
    /// PrintName), `0x00000008` the alias.
    static let genericPasswordFields: [Field] = [
        Field(7, "labl", .blob), Field(8, "alis", .blob),
        Field("acct", .blob), Field("cdat", .timedate), Field("crtr", .uint32), Field("cusi", .sint32),
        Field("desc", .blob), Field("gena", .blob), Field("icmt", .blob), Field("invi", .sint32),
        Field("mdat", .timedate), Field("nega", .sint32), Field("prot", .blob), Field("scrp", .sint32),
        Field("svce", .blob), Field("type", .uint32),
    ]

    /// macOS's attribute list for internet passwords, in its order.
    static let internetPasswordFields: [Field] = [
        Field(7, "labl", .blob), Field(8, "alis", .blob),
        Field("acct", .blob), Field("atyp", .blob), Field("cdat", .timedate), Field("crtr", .uint32),
        Field("cusi", .sint32), Field("desc", .blob), Field("icmt", .blob), Field("invi", .sint32),
        Field("mdat", .timedate), Field("nega", .sint32), Field("path", .blob), Field("port", .uint32),
        Field("prot", .blob), Field("ptcl", .uint32), Field("scrp", .sint32), Field("sdmn", .blob),
        Field("srvr", .blob), Field("type", .uint32),
    ]

    /// macOS's attribute list for certificates, in its order, with Apple's CSSM names for the derived attributes
    /// (`hpky` the public key hash, `issu` the issuer, `snbr` the serial number).
    static let certificateFields: [Field] = [
        Field("alis", .blob), Field("cenc", .uint32), Field("ctyp", .uint32),
        Field(fourCharCode("hpky"), "pkhh", .blob), Field(fourCharCode("issu"), "issr", .blob), Field("labl", .blob),
        Field("skid", .blob), Field(fourCharCode("snbr"), "slnr", .blob), Field("subj", .blob),
    ]

    /// The version macOS prints for a keychain database.
    static let keychainVersion = 512

    /// The full description of one item: `keychain:`, `version:`, `class:` and the `attributes:` block, then
    /// with `showData` the `data:` line and the secret (only `dump-keychain -d` passes it), and with `showGroup`
    /// `sync: yes` for a synchronizable item and the item's access group (`dump-keychain`).
    static func describe(_ item: KeychainItem, keychainPath: String, showData: Bool = false, showGroup: Bool = false) -> String {
        var out = "keychain: " + buffer(Array(keychainPath.utf8)) + "\n"
        out += "version: \(keychainVersion)\n"
        let fields: [Field]
        switch item.itemClass {
        case .internetPassword: fields = internetPasswordFields
        case .certificate, .identity: fields = certificateFields
        default: fields = genericPasswordFields
        }
        // macOS prints a certificate's CSSM record type as a number.
        out += "class: " + (fields == certificateFields ? "0x80001000 " : buffer(Array(item.itemClass.rawValue.utf8))) + "\n"
        out += "attributes:\n"
        for field in fields {
            out += "    " + buffer(bigEndianBytes(field.tag)) + field.format.rawValue + "="
            if let bytes = valueBytes(item.attributes[field.code], format: field.format), !bytes.isEmpty {
                out += buffer(bytes)
            } else {
                out += "<NULL>"
            }
            out += "\n"
        }
        // Not in macOS's listing (its file keychain has no access controls): the item's kSecAttrAccessControl, as
        // its constraints and accessibility, for example `access control: devicePasscode;whenUnlocked`.
        if let control = item.accessControl {
            out += "access control: \(control)\n"
        }
        // Ours as well: the programs the item trusts besides its access group's (-T, -A, set-…-partition-list),
        // numbered as macOS's ACL listing numbers its applications.
        let trusted = item.trustedApplications
        if !trusted.isEmpty {
            out += "trusted applications (\(trusted.count)):\n"
            for (index, application) in trusted.enumerated() {
                let shown = application == .anyApplication ? "* (any application)" : application.term
                out += "    \(index): \(shown)\n"
            }
        }
        if showData {
            out += "data:\n" + buffer(Array(item.data ?? Data())) + "\n"
        }
        // Not in macOS's listing (its file keychain has no access groups), and so last, in `dump-keychain` only: the
        // item's kSecAttrAccessGroup, which says whose item it is (an unregistered program's group is its
        // executable's path).
        // Also ours, in `dump-keychain` only: a synchronizable item (kSecAttrSynchronizable) says so.
        if showGroup, item.attributes[KeychainQuery.synchronizableCode]?.intValue == 1 {
            out += "sync: yes\n"
        }
        if showGroup, let group = item.attributes["agrp"]?.stringValue {
            out += "access group: " + buffer(Array(group.utf8)) + "\n"
        }
        return out
    }

    /// The `password: …` line of `find-… -g` (without its newline).
    static func passwordLine(_ secret: Data?) -> String {
        "password: " + buffer(Array(secret ?? Data()))
    }

    /// What `find-… -w` prints for a secret, before its newline: the text itself when it is UTF-8 without
    /// control characters, else lowercase hex of every byte (macOS prints hex whenever a byte is not printable).
    static func passwordOnly(_ secret: Data?) -> Data {
        let bytes = Array(secret ?? Data())
        let isText =
            String(validating: bytes, as: UTF8.self) != nil
            && !bytes.contains { $0 < 0x20 || $0 == 0x7F }
        if isText { return Data(bytes) }
        return Data(bytes.map { hexByte($0, uppercase: false) }.joined().utf8)
    }

    /// Apple's `print_buffer`: printable ASCII as `"text"`; anything else as `0x<HEX>` followed by the
    /// C-escaped text (two spaces between them) when some bytes are printable, or by one space when none are.
    static func buffer(_ bytes: [UInt8]) -> String {
        var hex = false
        var ascii = false
        for byte in bytes {
            if isPrintable(byte) { ascii = true } else { hex = true }
        }
        var out = ""
        if hex {
            out += "0x" + bytes.map { hexByte($0, uppercase: true) }.joined()
            if ascii { out += " " }
            out += " "
        }
        if ascii {
            out += "\""
            for byte in bytes {
                if isPrintable(byte) {
                    out.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    out += "\\" + String(byte >> 6 & 7) + String(byte >> 3 & 7) + String(byte & 7)
                }
            }
            out += "\""
        }
        return out
    }

    /// The bytes macOS would hold for an attribute of the given format, or nil when it has no value.
    static func valueBytes(_ value: KeychainItem.Value?, format: Format) -> [UInt8]? {
        guard let value else { return nil }
        switch format {
        case .timedate:
            if case .date(let date) = value { return Array(timeDate(date).utf8) + [0] }
            return blobBytes(value)
        case .uint32, .sint32:
            switch value {
            case .int(let number): return bigEndianBytes(UInt32(truncatingIfNeeded: number))
            case .double(let number) where number.isFinite && abs(number) < 9e18:
                return bigEndianBytes(UInt32(truncatingIfNeeded: Int64(number)))
            default: return blobBytes(value)
            }
        case .blob:
            return blobBytes(value)
        }
    }

    static func blobBytes(_ value: KeychainItem.Value) -> [UInt8] {
        switch value {
        case .string(let text): Array(text.utf8)
        case .data(let data): Array(data)
        case .int(let number): Array(String(number).utf8)
        case .double(let number): Array(String(number).utf8)
        case .date(let date): Array(timeDate(date).utf8) + [0]
        }
    }

    /// CSSM's time-date text: `yyyyMMddHHmmssZ` in GMT.
    static func timeDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(c.year, 4) + pad(c.month, 2) + pad(c.day, 2) + pad(c.hour, 2) + pad(c.minute, 2) + pad(c.second, 2) + "Z"
    }

    /// The 32-bit big-endian number of a four-character code's ASCII bytes (`'abcd'`).
    static func fourCharCode(_ code: String) -> UInt32 {
        code.utf8.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    static func bigEndianBytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte <= 0x7E && byte != 0x5C }

    static func hexByte(_ byte: UInt8, uppercase: Bool) -> String {
        let digits: [Character] = Array(uppercase ? "0123456789ABCDEF" : "0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}
