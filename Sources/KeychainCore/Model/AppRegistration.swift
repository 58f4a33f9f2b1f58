import Foundation

/// One program keychaind knows, and the entitlements it has: Apple's `application-identifier` and
/// `keychain-access-groups`, granted here instead of by a code signature.
package struct AppRegistration: Sendable, Hashable {
    /// How the program is recognised.
    package enum Program: Sendable, Hashable {
        /// A host executable at `path` whose contents hash to `sha256` (hex). Both must match: a changed or
        /// moved binary must be registered again.
        case executable(path: String, sha256: String)
        /// A Flatpak app ID.
        case flatpak(String)
        /// A snap name.
        case snap(String)
    }

    package var program: Program
    package var applicationIdentifier: String?
    package var accessGroups: [String]

    package init(program: Program, applicationIdentifier: String?, accessGroups: [String]) {
        self.program = program
        self.applicationIdentifier = applicationIdentifier
        self.accessGroups = accessGroups
    }

    /// The program's groups in Apple's order: `keychain-access-groups`, then `application-identifier`.
    package var groups: [String] {
        var seen = Set<String>()
        return (accessGroups + [applicationIdentifier].compactMap { $0 }).filter { seen.insert($0).inserted }
    }

    /// Whether this registration is for the same program as `other` (whatever its hash or groups).
    package func samePlace(as other: AppRegistration) -> Bool {
        switch (program, other.program) {
        case let (.executable(a, _), .executable(b, _)): a == b
        case let (.flatpak(a), .flatpak(b)): a == b
        case let (.snap(a), .snap(b)): a == b
        default: false
        }
    }

    var plist: PlistValue {
        var d = program.plistFields
        d["groups"] = .array(accessGroups.map(PlistValue.string))
        if let applicationIdentifier { d["applicationIdentifier"] = .string(applicationIdentifier) }
        return .dictionary(d)
    }

    init?(plist: PlistValue) {
        guard case .dictionary(let d) = plist, let program = Program(plistFields: d), case .array(let list)? = d["groups"] else { return nil }
        var groups: [String] = []
        for case .string(let g) in list { groups.append(g) }
        self.program = program
        if case .string(let appID)? = d["applicationIdentifier"] { applicationIdentifier = appID } else { applicationIdentifier = nil }
        accessGroups = groups
    }

    /// The registration as a property-list value (for the wire and `security app list`).
    package var wireValue: PlistValue { plist }
    /// Reads a registration sent as ``wireValue``.
    package init?(wireValue: PlistValue) { self.init(plist: wireValue) }
}

extension AppRegistration.Program {
    /// The program's fields in the registry's and the consent file's property lists: `kind` (`executable`,
    /// `flatpak`, `snap`), `id`, and an executable's `sha256`.
    var plistFields: [String: PlistValue] {
        switch self {
        case let .executable(path, sha256): ["kind": .string("executable"), "id": .string(path), "sha256": .string(sha256)]
        case let .flatpak(id): ["kind": .string("flatpak"), "id": .string(id)]
        case let .snap(name): ["kind": .string("snap"), "id": .string(name)]
        }
    }

    /// Reads the fields ``plistFields`` writes; nil when they name no program.
    init?(plistFields d: [String: PlistValue]) {
        guard case .string(let kind)? = d["kind"], case .string(let id)? = d["id"] else { return nil }
        switch kind {
        case "executable":
            guard case .string(let sha)? = d["sha256"] else { return nil }
            self = .executable(path: id, sha256: sha)
        case "flatpak": self = .flatpak(id)
        case "snap": self = .snap(id)
        default: return nil
        }
    }
}
