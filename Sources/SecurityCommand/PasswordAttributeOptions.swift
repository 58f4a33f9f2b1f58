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

    /// The values of the flags that may be bytes (``RawArguments``), as given.
    var byteValues: [String?] { [account, label, comment, kind] }

    /// The given attributes by four-character code, the label defaulting to `defaultLabel`. Creator and type are
    /// stored as numbers, as Apple's `kSecAttrCreator`/`kSecAttrType` are. A name given as bytes that are not
    /// UTF-8 is stored as those bytes (a Data attribute, ``RawArguments/value(_:escaping:)``).
    func attributes(defaultLabel: String?) -> [String: KeychainItem.Value] {
        var out: [String: KeychainItem.Value] = [:]
        out["acct"] = account.map { RawArguments.value($0) }
        out["labl"] = (label ?? defaultLabel).map { RawArguments.value($0) }
        out["icmt"] = comment.map { RawArguments.value($0) }
        out["desc"] = kind.map { RawArguments.value($0) }
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
    /// The values of the flags that may be bytes that are not UTF-8, as given (for ``RawArguments/requireCarried(_:function:escaped:)``).
    var byteValues: [String?] { get }
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

    var byteValues: [String?] { common.byteValues + [generic, service] }

    func attributes(forAdding: Bool) -> [String: KeychainItem.Value] {
        var out = common.attributes(defaultLabel: forAdding ? service : nil)
        out["svce"] = service.map { RawArguments.value($0) }
        out["gena"] = generic.map { RawArguments.value($0) }
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

    var byteValues: [String?] { common.byteValues + [securityDomain, path, server] }

    /// Protocol and authentication type are stored as four-character strings, as Apple's `kSecAttrProtocol…` and
    /// `kSecAttrAuthenticationType…` constants are; a port of 0 means none, as on macOS.
    func attributes(forAdding: Bool) -> [String: KeychainItem.Value] {
        var out = common.attributes(defaultLabel: forAdding ? server : nil)
        out["srvr"] = server.map { RawArguments.value($0) }
        out["sdmn"] = securityDomain.map { RawArguments.value($0) }
        out["path"] = path.map { RawArguments.value($0) }
        if let port, port != 0 { out["port"] = .int(Int64(port)) }
        out["ptcl"] = `protocol`?.stringValue
        out["atyp"] = (authenticationType ?? (forAdding ? FourCharCode(argument: "dflt") : nil))?.stringValue
        return out
    }
}

/// The flags both add verbs take besides the item's attributes and its password (`-X -U -A -T`).
struct AddOptions: ParsableArguments {
    @Option(
        name: .customShort("X"), parsing: .unconditional,
        help: ArgumentHelp("Specify password data to be added as a hexadecimal string (on the command line, where other users can read it: prefer --password-stdin).", valueName: "hex"))
    var hexPassword: HexData?

    @Flag(name: .customShort("U"), help: "Update item if it already exists (if omitted, the item cannot already exist).")
    var update = false

    @Flag(name: .customShort("A"), help: "Allow any application of this user to read this item, not only the programs of its access group (not recommended).")
    var allowAnyApplication = false

    @Option(
        name: .customShort("T"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "Specify an application which may read this item besides the programs of its access group; repeatable. A path (symlinks are resolved), flatpak:APPID, snap:NAME or teamid:TEAM; -T \"\" trusts no other application. Trusted programs may read the item, not change or delete it.",
            valueName: "appPath"))
    var trustedApplications: [String] = []

    @Option(
        name: .customLong("access-control"),
        help: ArgumentHelp(
            "Protect the item with an access control (kSecAttrAccessControl): reading its password then needs the user's presence. One of userPresence, devicePasscode, biometryAny, biometryCurrentSet, applicationPassword; comma-separated or repeated for several, all needed unless --or is given. The item's accessibility is whenUnlocked.",
            valueName: "constraint"))
    var accessControlNames: [String] = []

    @Flag(name: .customLong("or"), help: "With several --access-control constraints, any one of them suffices (kSecAccessControlOr).")
    var anyConstraint = false

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "--sync makes the item synchronizable (kSecAttrSynchronizable): it syncs to the machines of your sync account (security sync). --no-sync keeps it on this machine. Without either, a new item follows `security sync default` (off unless set), and -U leaves an item as it is."
        ))
    var sync: Bool?

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

    /// The item's trusted applications as the `xtap` attribute: `*` for `-A`, then each `-T` (see
    /// ``TrustedApplicationTerms``); nil when neither flag was given (an update leaves the item's list alone).
    func trustedApplicationsValue() throws(ToolFailure) -> KeychainItem.Value? {
        guard allowAnyApplication || !trustedApplications.isEmpty else { return nil }
        var terms = allowAnyApplication ? [KeychainTrustedApplication.anyApplication.term] : []
        terms += try TrustedApplicationTerms.resolved(trustedApplications)
        return KeychainItem.trustedApplicationsValue(try TrustedApplicationTerms.checked(terms))
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

/// Turns `-T` and `-S` arguments into trusted-application terms (see KeychainKit's `KeychainTrustedApplication`).
enum TrustedApplicationTerms {
    /// The function macOS names when a `-T` path is not an application.
    static let function = "SecTrustedApplicationCreateFromPath"

    /// Each argument as a term: a path (absolute or relative to the working directory) with symlinks resolved, or
    /// a term as given (`flatpak:`, `snap:`, `teamid:`, `apple-tool:`, `apple:`, `*`); an empty one is left out.
    static func resolved(_ arguments: [String]) throws(ToolFailure) -> [String] {
        var terms: [String] = []
        for argument in arguments where !argument.isEmpty {
            let isTerm =
                argument == "*" || argument.hasSuffix(":")
                || ["flatpak:", "snap:", "teamid:"].contains(where: { argument.hasPrefix($0) })
            if isTerm {
                terms.append(argument)
                continue
            }
            let absolute = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
            guard let application = try? KeychainTrustedApplication.program(atPath: absolute) else {
                throw ToolFailure.input(function, "\(argument): no such file. Give the path of the program to trust (or flatpak:APPID, snap:NAME, teamid:TEAM).")
            }
            terms.append(application.term)
        }
        return terms
    }

    /// The terms as trusted applications, refusing (exit 1) one that is none of the forms.
    static func checked(_ terms: [String]) throws(ToolFailure) -> [KeychainTrustedApplication] {
        var list: [KeychainTrustedApplication] = []
        for term in terms {
            do {
                list.append(try KeychainTrustedApplication(term))
            } catch {
                throw ToolFailure.input(function, error.message)
            }
        }
        return list
    }
}
