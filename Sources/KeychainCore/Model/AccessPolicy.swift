import Foundation

/// The access groups a caller may use, in Apple's order; the first is the default for new items.
package struct AccessPolicy: Sendable, Hashable {
    /// The caller's groups, in order. `"*"` grants every group, as for Apple's system clients.
    package let groups: [String]
    /// Whether the caller may use every access group (the `security` tool, the user's own admin tool).
    package let unrestricted: Bool
    /// The program making the call, as a key that proofs of presence are bound to: keychaind sets it from the
    /// kernel's identification (path and executable hash, Flatpak or snap ID); in a program's own process it is
    /// that process.
    package var program: String = "this process"
    /// The program as a prompt names it (keychaind: as identified, never as the client describes itself).
    package var programName: String = AccessPolicy.processName
    /// The terms this caller is known by in items' trusted-application lists (``TrustedApplications``): `*`, its
    /// program (keychaind: as the kernel identified it, never for an untrusted process; in a program's own process:
    /// its executable's path) and the `teamid:` of its groups. Empty: it reads only its groups' items.
    package var trustedAs: [String] = []

    package init(groups: [String]) {
        self.groups = groups.filter { $0 != "*" }
        unrestricted = groups.contains("*")
    }

    /// The same groups, for the program identified as `program` and named `name` in prompts.
    package func identified(as program: String, name: String) -> AccessPolicy {
        var copy = self
        copy.program = program
        copy.programName = name
        return copy
    }

    /// A caller that may use every group and creates new items in `defaultGroup`.
    package static func unrestricted(defaultGroup: String) -> AccessPolicy {
        AccessPolicy(groups: [defaultGroup, "*"])
    }

    package var defaultGroup: String? { groups.first }

    /// The same groups, known in trusted-application lists as `program` (nil: by `*` and its teams only) and by the
    /// teams of `teamGroups` (by default its groups; keychaind passes only those the registry gave it, so that a
    /// program's self-chosen name, such as a Flatpak app ID, never makes it a member of a team).
    package func trusted(as program: String?, teamGroups: [String]? = nil) -> AccessPolicy {
        var copy = self
        copy.trustedAs = TrustedApplications.callerTerms(program: program, groups: teamGroups ?? groups)
        return copy
    }

    package func allows(_ group: String) -> Bool { unrestricted || groups.contains(group) }

    /// The caller's groups from the entitlements plist named by `KEYCHAIN_ENTITLEMENTS`: its
    /// `keychain-access-groups`, then its `application-identifier` (Apple's order). Without the variable, the only
    /// group is the program's private group, the one keychaind gives it too (``ProgramName/ownPrivateGroup``: its
    /// executable's full path, a Flatpak app's ID, `snap.NAME`).
    package static func fromEnvironment(
        _ environment: [String: String] = KeychainLocation.processEnvironment(),
        privateGroup: String = ProgramName.ownPrivateGroup
    ) throws(KeychainError) -> AccessPolicy {
        guard let path = environment["KEYCHAIN_ENTITLEMENTS"], !path.isEmpty else {
            return AccessPolicy(groups: [privateGroup])
        }
        return try fromEntitlements(at: path)
    }

    /// Reads an entitlements plist (XML or binary).
    package static func fromEntitlements(at path: String) throws(KeychainError) -> AccessPolicy {
        let unreadable = KeychainError(
            code: .missingEntitlement,
            message:
                "KEYCHAIN_ENTITLEMENTS names \(path), which is not a readable property list with 'keychain-access-groups' (array of strings) and/or 'application-identifier' (string). Fix the file or unset the variable."
        )
        guard let data = try FileSystem.read(path, followingLinks: true),
            let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
            let dict = plist as? [String: Any]
        else { throw unreadable }
        var groups: [String] = []
        if let list = dict["keychain-access-groups"] {
            guard let strings = list as? [String] else { throw unreadable }
            groups += strings
        }
        if let appID = dict["application-identifier"] {
            guard let s = appID as? String else { throw unreadable }
            groups.append(s)
        }
        var seen = Set<String>()
        return AccessPolicy(groups: groups.filter { seen.insert($0).inserted })
    }

    /// This process's executable name, read once.
    package static let processName = currentExecutableName()

    /// The name of the running executable (`/proc/self/exe`, else `argv[0]`).
    package static func currentExecutableName() -> String {
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), !exe.isEmpty {
            return NSStringPath(exe).lastPathComponent
        }
        return NSStringPath(CommandLine.arguments.first ?? "unknown").lastPathComponent
    }
}
