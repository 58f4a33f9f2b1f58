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
        var d: [String: PlistValue] = ["groups": .array(accessGroups.map(PlistValue.string))]
        switch program {
        case let .executable(path, sha256):
            d["kind"] = .string("executable"); d["id"] = .string(path); d["sha256"] = .string(sha256)
        case let .flatpak(id): d["kind"] = .string("flatpak"); d["id"] = .string(id)
        case let .snap(name): d["kind"] = .string("snap"); d["id"] = .string(name)
        }
        if let applicationIdentifier { d["applicationIdentifier"] = .string(applicationIdentifier) }
        return .dictionary(d)
    }

    init?(plist: PlistValue) {
        guard case .dictionary(let d) = plist, case .string(let kind)? = d["kind"], case .string(let id)? = d["id"],
              case .array(let list)? = d["groups"] else { return nil }
        var groups: [String] = []
        for case .string(let g) in list { groups.append(g) }
        switch kind {
        case "executable":
            guard case .string(let sha)? = d["sha256"] else { return nil }
            program = .executable(path: id, sha256: sha)
        case "flatpak": program = .flatpak(id)
        case "snap": program = .snap(id)
        default: return nil
        }
        if case .string(let appID)? = d["applicationIdentifier"] { applicationIdentifier = appID } else { applicationIdentifier = nil }
        accessGroups = groups
    }

    /// The registration as a property-list value (for the wire and `security app list`).
    package var wireValue: PlistValue { plist }
    /// Reads a registration sent as ``wireValue``.
    package init?(wireValue: PlistValue) { self.init(plist: wireValue) }
}
