/// How an attribute's values are accepted and stored (Apple's `SecDbAttrKind`).
package enum AttributeKind: Sendable {
    /// String, data or number, kept with the type it was given.
    case blob
    /// Number or boolean (stored 0/1); an integer-looking string becomes a number, any other string stays a string.
    case number
    /// A date only.
    case date
    /// A string, or UTF-8 data converted to a string.
    case string
    /// Data, or a string converted to its UTF-8 bytes.
    case data
    /// The accessibility class: one of the `kSecAttrAccessible…` strings.
    case accessibility
    /// An access-control object (not yet supported; any value is rejected with `errSecParam`).
    case accessControl
    /// Ours: a list of trusted applications (``TrustedApplications``), given as an array of strings.
    case trustedApplications
}

/// One attribute of an item class: the row of the schema table that drives every class.
package struct AttributeDescriptor: Sendable, Hashable {
    /// Apple's four-character code, e.g. `acct`.
    package let code: String
    /// How values are accepted and stored.
    package let kind: AttributeKind
    /// Part of the class's uniqueness key (`P` in Apple's schema).
    package let primaryKey: Bool
    /// Has a keyed-hash column, so equality search and duplicate detection run without decryption.
    package let searchable: Bool
    /// Set by the keychain only; callers cannot set it (`cdat`, `mdat`).
    package let readOnly: Bool
    /// The value stored when the caller gives none (primary-key attributes default to empty values).
    package let defaultValue: AttributeValue?

    package init(
        _ code: String, _ kind: AttributeKind, primaryKey: Bool = false, searchable: Bool = true,
        readOnly: Bool = false, default defaultValue: AttributeValue? = nil
    ) {
        self.code = code
        self.kind = kind
        self.primaryKey = primaryKey
        self.searchable = searchable
        self.readOnly = readOnly
        self.defaultValue = defaultValue
    }
}

/// The item classes of the data-protection keychain.
package enum ItemClass: String, Sendable, CaseIterable, Hashable {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case certificate = "cert"
    case key = "keys"
    case identity = "idnt"

    /// The SQL table that stores the class (identities are a join of `cert` and `keys`).
    package var table: String { rawValue }

    /// The classes stored in their own tables.
    package static let stored: [ItemClass] = [.genericPassword, .internetPassword, .certificate, .key]

    /// The class's attributes, in schema order.
    package var attributes: [AttributeDescriptor] { Schema.attributes[self] ?? [] }

    /// Secondary indexes over the class's hash columns.
    package var indexes: [[String]] { Schema.indexes[self] ?? [] }

    /// The class's primary-key attributes, in schema order.
    package var primaryKey: [AttributeDescriptor] { Schema.primaryKeys[self] ?? [] }

    /// The descriptor for a four-character code, if the class has that attribute.
    package func attribute(_ code: String) -> AttributeDescriptor? { Schema.byCode[self]?[code] }

    /// The accessibility of new items that give none: `dk` (Always) for certificates, `ak` otherwise.
    package var defaultAccessibility: ProtectionClass {
        self == .certificate ? .always : .whenUnlocked
    }

    /// Apple's attribute order for the first four bytes of a persistent reference.
    package init?(persistentRefPrefix bytes: some Collection<UInt8>) {
        guard bytes.count == 4, let s = String(validating: bytes, as: UTF8.self) else { return nil }
        self.init(rawValue: s)
    }
}

/// The attribute table of every item class, as data (Apple's `SecItemSchema.c`, schema 12).
///
/// Our deliberate difference from Apple: searchable columns hold an HMAC-SHA256 keyed by the keybag's
/// metadata key, not a plain SHA-1, so the database reveals nothing about values to someone without the keybag.
package enum Schema {
    static let emptyString = AttributeValue.string("")
    static let emptyData = AttributeValue.data(.init())
    static let zero = AttributeValue.int(0)

    /// Attributes every class has. `musr` is fixed (single-user keychain) and not listed.
    static let common: [AttributeDescriptor] = [
        .init("cdat", .date, searchable: false, readOnly: true),
        .init("mdat", .date, searchable: false, readOnly: true),
        .init("agrp", .string, primaryKey: true),
        .init("pdmn", .accessibility, searchable: false),
        .init("sync", .number, primaryKey: true, searchable: false, default: zero),
        .init("tomb", .number, searchable: false, default: zero),
        .init("vwht", .string, primaryKey: true, default: emptyString),
        .init("tkid", .string, primaryKey: true, default: emptyString),
        .init("ggrp", .string, primaryKey: true, default: emptyString),
        .init("accc", .accessControl, searchable: false),
        // Ours, not Apple's: the programs trusted to read the item besides its group's (TrustedApplications),
        // found through their own index table.
        .init(TrustedApplications.code, .trustedApplications, searchable: false),
    ]

    static let passwordCommon: [AttributeDescriptor] = [
        .init("desc", .blob), .init("icmt", .blob), .init("crtr", .number), .init("type", .number),
        .init("labl", .blob), .init("invi", .number), .init("nega", .number),
        .init("cusi", .number), .init("prot", .blob), .init("alis", .blob), .init("scrp", .number),
    ]

    static let genpOwn: [AttributeDescriptor] = [
        .init("acct", .blob, primaryKey: true, default: emptyString),
        .init("svce", .blob, primaryKey: true, default: emptyString),
        .init("gena", .blob),
        // Ours, not Apple's: free-form attributes (the Secret Service's), searched through their own index table
        // (see ExtendedAttributes), and the secret's content type as the Secret Service gives it.
        .init(ExtendedAttributes.code, .data, searchable: false),
        .init("xcty", .string, searchable: false),
    ]
    static let genp: [AttributeDescriptor] = concat(passwordCommon, genpOwn, common)

    static let inetOwn: [AttributeDescriptor] = [
        .init("acct", .blob, primaryKey: true, default: emptyString),
        .init("sdmn", .blob, primaryKey: true, default: emptyString),
        .init("srvr", .blob, primaryKey: true, default: emptyString),
        .init("ptcl", .number, primaryKey: true, default: zero),
        .init("atyp", .blob, primaryKey: true, default: emptyString),
        .init("port", .number, primaryKey: true, default: zero),
        .init("path", .blob, primaryKey: true, default: emptyString),
    ]
    static let inet: [AttributeDescriptor] = concat(passwordCommon, inetOwn, common)

    static let certOwn: [AttributeDescriptor] = [
        .init("ctyp", .number, primaryKey: true, default: zero),
        .init("cenc", .number),
        .init("labl", .blob), .init("alis", .blob),
        .init("subj", .data),
        .init("issr", .data, primaryKey: true, default: emptyData),
        .init("slnr", .data, primaryKey: true, default: emptyData),
        .init("skid", .data), .init("pkhh", .data),
    ]
    static let cert: [AttributeDescriptor] = concat(certOwn, common)

    static let keysOwn: [AttributeDescriptor] = [
        .init("kcls", .number, primaryKey: true, default: zero),
        .init("labl", .blob), .init("alis", .blob),
        .init("perm", .number), .init("priv", .number), .init("modi", .number),
        .init("klbl", .data, primaryKey: true, default: emptyData),
        .init("atag", .blob, primaryKey: true, default: emptyData),
        .init("crtr", .number, primaryKey: true, default: zero),
        .init("type", .number, primaryKey: true, default: zero),
        .init("bsiz", .number, primaryKey: true, default: zero),
        .init("esiz", .number, primaryKey: true, default: zero),
        .init("sdat", .date, primaryKey: true, searchable: false, default: .date(.init(timeIntervalSinceReferenceDate: 0))),
        .init("edat", .date, primaryKey: true, searchable: false, default: .date(.init(timeIntervalSinceReferenceDate: 0))),
        .init("sens", .number), .init("asen", .number), .init("extr", .number), .init("next", .number),
        .init("encr", .number), .init("decr", .number), .init("drve", .number), .init("sign", .number),
        .init("vrfy", .number), .init("snrc", .number), .init("vyrc", .number), .init("wrap", .number),
        .init("unwp", .number),
    ]
    static let keys: [AttributeDescriptor] = concat(keysOwn, common)

    static func concat(_ parts: [AttributeDescriptor]...) -> [AttributeDescriptor] { parts.flatMap { $0 } }

    static let attributes: [ItemClass: [AttributeDescriptor]] = [
        .genericPassword: genp,
        .internetPassword: inet,
        .certificate: cert,
        .key: keys,
        // An identity is a certificate joined with its private key: the union of both attribute sets.
        .identity: concat(cert, keys.filter { k in !cert.contains { $0.code == k.code } }),
    ]

    static let byCode: [ItemClass: [String: AttributeDescriptor]] = attributes.mapValues { list in
        Dictionary(list.map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Secondary indexes over hash columns, per class (Apple's `I` flag, folded into the lookups people make).
    static let indexes: [ItemClass: [[String]]] = [
        .genericPassword: [["svce", "acct"], ["acct"]],
        .internetPassword: [["srvr", "acct"], ["acct"]],
        .certificate: [["pkhh"], ["subj"]],
        .key: [["klbl"], ["atag"]],
    ]

    static let primaryKeys: [ItemClass: [AttributeDescriptor]] = attributes.mapValues { list in
        list.filter(\.primaryKey)
    }
}
