import ArgumentParser
import Foundation
import KeychainKit

/// How the attribute flags are described: values an item must have (find, delete) or values to store (add).
protocol AttributeWording {
    /// The help line of the flag for `what`.
    static func help(_ what: String, valueName: String) -> ArgumentHelp
}

/// `find-…` and `delete-…`: the flags name values to match.
enum Matching: AttributeWording {
    static func help(_ what: String, valueName: String) -> ArgumentHelp { ArgumentHelp("Match \(what).", valueName: valueName) }
}

/// `add-…`: the flags name values to store.
enum Specifying: AttributeWording {
    static func help(_ what: String, valueName: String) -> ArgumentHelp { ArgumentHelp("Specify \(what).", valueName: valueName) }
}

/// The flags generic and internet passwords share (macOS's `-a -c -C -D -j -l`).
struct CommonAttributeOptions<Wording: AttributeWording>: ParsableArguments {
    @Option(name: .customShort("a"), parsing: .unconditional, help: Wording.help("\"account\" string", valueName: "account"))
    var account: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: Wording.help("\"creator\" (four-character code)", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("C"), parsing: .unconditional, help: Wording.help("\"type\" (four-character code)", valueName: "type"))
    var type: FourCharCode?

    @Option(name: .customShort("D"), parsing: .unconditional, help: Wording.help("\"kind\" string", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: Wording.help("\"comment\" string", valueName: "comment"))
    var comment: String?

    @Option(name: .customShort("l"), parsing: .unconditional, help: Wording.help("\"label\" string (an added item's label defaults to its service or server)", valueName: "label"))
    var label: String?

    /// The given attributes by four-character code, the label defaulting to `defaultLabel`. Creator and type are
    /// stored as numbers, as Apple's `kSecAttrCreator`/`kSecAttrType` are.
    func attributes(defaultLabel: String?) -> [String: KeychainItem.Value] {
        var out: [String: KeychainItem.Value] = [:]
        out["acct"] = account.map(KeychainItem.Value.string)
        out["labl"] = (label ?? defaultLabel).map(KeychainItem.Value.string)
        out["icmt"] = comment.map(KeychainItem.Value.string)
        out["desc"] = kind.map(KeychainItem.Value.string)
        out["crtr"] = creator?.numberValue
        out["type"] = type?.numberValue
        return out
    }
}

/// What the password verbs need of their attribute flags.
protocol PasswordAttributes {
    /// The item class the flags describe.
    static var itemClass: KeychainItem.Class { get }
    /// Every given attribute by four-character code; an added item gets its defaults (label, authentication type).
    func attributes(forAdding: Bool) -> [String: KeychainItem.Value]
}

extension PasswordAttributes {
    /// What a search matches on. As on macOS, when the whole primary key is given the other attributes are not
    /// searched on, so `-U` can change them.
    func searchAttributes(forAdding: Bool = false) -> [String: KeychainItem.Value] {
        PasswordItems.narrowedToPrimaryKey(attributes(forAdding: forAdding), Self.itemClass)
    }

    /// Whether no attribute was given at all.
    var isEmpty: Bool { attributes(forAdding: false).isEmpty }
}

/// A generic password's flags (`-a -c -C -D -G -j -l -s`).
struct GenericAttributeOptions<Wording: AttributeWording>: ParsableArguments, PasswordAttributes {
    @OptionGroup var common: CommonAttributeOptions<Wording>

    @Option(name: .customShort("G"), parsing: .unconditional, help: Wording.help("\"value\" string (generic attribute)", valueName: "value"))
    var generic: String?

    @Option(name: .customShort("s"), parsing: .unconditional, help: Wording.help("\"service\" string", valueName: "service"))
    var service: String?

    static var itemClass: KeychainItem.Class { .genericPassword }

    func attributes(forAdding: Bool) -> [String: KeychainItem.Value] {
        var out = common.attributes(defaultLabel: forAdding ? service : nil)
        out["svce"] = service.map(KeychainItem.Value.string)
        out["gena"] = generic.map(KeychainItem.Value.string)
        return out
    }
}

/// An internet password's flags (`-a -c -C -d -D -j -l -p -P -r -s -t`).
struct InternetAttributeOptions<Wording: AttributeWording>: ParsableArguments, PasswordAttributes {
    @OptionGroup var common: CommonAttributeOptions<Wording>

    @Option(name: .customShort("d"), parsing: .unconditional, help: Wording.help("\"securityDomain\" string", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(name: .customShort("p"), parsing: .unconditional, help: Wording.help("\"path\" string", valueName: "path"))
    var path: String?

    @Option(name: .customShort("P"), parsing: .unconditional, help: Wording.help("port number", valueName: "port"))
    var port: UInt16?

    @Option(name: .customShort("r"), parsing: .unconditional, help: Wording.help("\"protocol\" (four-character code, e.g. \"htps\")", valueName: "protocol"))
    var `protocol`: FourCharCode?

    @Option(name: .customShort("s"), parsing: .unconditional, help: Wording.help("\"server\" string", valueName: "server"))
    var server: String?

    @Option(name: .customShort("t"), parsing: .unconditional, help: Wording.help("\"authenticationType\" (four-character code; an added item's defaults to \"dflt\")", valueName: "authenticationType"))
    var authenticationType: FourCharCode?

    static var itemClass: KeychainItem.Class { .internetPassword }

    /// Protocol and authentication type are stored as four-character strings, as Apple's `kSecAttrProtocol…` and
    /// `kSecAttrAuthenticationType…` constants are; a port of 0 means none, as on macOS.
    func attributes(forAdding: Bool) -> [String: KeychainItem.Value] {
        var out = common.attributes(defaultLabel: forAdding ? server : nil)
        out["srvr"] = server.map(KeychainItem.Value.string)
        out["sdmn"] = securityDomain.map(KeychainItem.Value.string)
        out["path"] = path.map(KeychainItem.Value.string)
        if let port, port != 0 { out["port"] = .int(Int64(port)) }
        out["ptcl"] = `protocol`?.stringValue
        out["atyp"] = (authenticationType ?? (forAdding ? FourCharCode(argument: "dflt") : nil))?.stringValue
        return out
    }
}

/// The flags both add verbs take besides the item's attributes and its password (`-X -U -A -T`).
struct AddOptions: ParsableArguments {
    @Option(name: .customShort("X"), parsing: .unconditional, help: ArgumentHelp("Specify password data to be added as a hexadecimal string (on the command line, where other users can read it: prefer --password-stdin).", valueName: "hex"))
    var hexPassword: HexData?

    @Flag(name: .customShort("U"), help: "Update item if it already exists (if omitted, the item cannot already exist).")
    var update = false

    @Flag(name: .customShort("A"), help: "Allow any application to access this item (accepted for compatibility; ignored).")
    var allowAnyApplication = false

    @Option(name: .customShort("T"), parsing: .unconditionalSingleValue,
            help: ArgumentHelp("Specify an application which may access this item; repeatable (accepted for compatibility; ignored: access is by access group, see `security app`).", valueName: "appPath"))
    var trustedApplications: [String] = []

    @Option(name: .customLong("access-control"),
            help: ArgumentHelp("Protect the item with an access control (kSecAttrAccessControl): reading its password then needs the user's presence. One of userPresence, devicePasscode, biometryAny, biometryCurrentSet, applicationPassword; comma-separated or repeated for several, all needed unless --or is given. The item's accessibility is whenUnlocked. (macOS's -T app list has no counterpart here.)", valueName: "constraint"))
    var accessControlNames: [String] = []

    @Flag(name: .customLong("or"), help: "With several --access-control constraints, any one of them suffices (kSecAccessControlOr).")
    var anyConstraint = false

    /// The constraints a user may name.
    static let constraintNames = ["userPresence", "devicePasscode", "biometryAny", "biometryCurrentSet", "applicationPassword"]

    /// The names given, split at commas.
    var constraints: [String] {
        accessControlNames.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    func validate() throws {
        for name in constraints where !Self.constraintNames.contains(name) {
            throw ValidationError("--access-control: '\(name)' is not a constraint; use \(Self.constraintNames.joined(separator: ", ")).")
        }
        if anyConstraint && constraints.isEmpty {
            throw ValidationError("--or combines --access-control constraints: give some.")
        }
    }

    /// The access control the options name; nil without --access-control. Apple's combination rules apply
    /// (errSecParam for, say, userPresence with devicePasscode).
    func accessControl(function: String) throws(ToolFailure) -> KeychainAccessControl? {
        guard !constraints.isEmpty else { return nil }
        var set: KeychainAccessControl.Constraints = anyConstraint ? .or : []
        for name in constraints {
            if let constraint = KeychainAccessControl.Constraints(name: name) { set.insert(constraint) }
        }
        do {
            return try KeychainAccessControl(set)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

/// The keychain names macOS's verbs take last (a name such as `work`, or a path ending in one); none: the default
/// keychain (the search list for searches).
struct KeychainNames: ParsableArguments {
    @Argument(help: ArgumentHelp("The keychain to use: a name such as `work` (see `security list-keychains`) or its path; default: the default keychain.", valueName: "keychain"))
    var keychains: [String] = []

    /// The one keychain named, if any (the first when several are).
    var first: String? { keychains.first }
}
