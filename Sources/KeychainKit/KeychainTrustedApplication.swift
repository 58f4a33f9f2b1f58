import Foundation
import KeychainCore

/// A program trusted to find and read an item besides the programs of the item's access group: swift-keychain's
/// counterpart of macOS's trusted applications (`security add-generic-password -T`, `-A`) and partition lists.
/// Not part of Apple's data-protection keychain, whose items are reached by access group only; the access group
/// still owns the item.
///
/// A trusted program may read the item (its attributes and secret; an access control still asks for the user's
/// presence). It may not change or delete it, nor change whom the item trusts: only programs of the item's access
/// group and the user's admin tool (`security`) can. Through keychaind a program is recognised as the kernel
/// identifies it (its executable's path, Flatpak app ID or snap name); a process started with `LD_PRELOAD` or the
/// like, traced, or running a replaced executable is never a trusted path. In a program's own process
/// (`KEYCHAIN_DAEMON_SOCKET=off`) nothing is enforced between programs.
///
/// ```swift
/// let shared = Keychain(service: "deploy")
///     .trustedApplications([try .program(atPath: "/usr/bin/git-credential-keychain")])
/// try shared.set("token", for: "ci")
/// ```
public struct KeychainTrustedApplication: Sendable, Hashable, CustomStringConvertible {
    /// The entry as stored and shown: an absolute path, `flatpak:APPID`, `snap:NAME`, `teamid:TEAM`,
    /// `apple-tool:`, `apple:`, or `*` (any program).
    public let term: String

    /// The entry `term`, in the form ``term`` describes.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/param` for any other form (a relative path, a path with `.`
    ///   or `..` components).
    public init(_ term: String) throws(KeychainError) {
        let list = try TrustedApplications([term])
        guard let checked = list.terms.first else {
            throw KeychainError(code: .invalidParameter, message: "A trusted application cannot be empty.")
        }
        self.term = checked
    }

    private init(checked term: String) {
        self.term = term
    }

    /// The program whose executable is at `path`, with symlinks resolved (as keychaind names a program by the file
    /// it runs).
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/param` when there is no such file or the path is relative.
    public static func program(atPath path: String) throws(KeychainError) -> KeychainTrustedApplication {
        guard path.hasPrefix("/"), let resolved = TrustedApplications.resolvedPath(path) else {
            throw KeychainError(code: .invalidParameter, message: "Cannot trust the application \(path): there is no such file (give the absolute path of an executable).")
        }
        return try KeychainTrustedApplication(resolved)
    }

    /// The Flatpak app `appID` (such as `org.example.App`).
    public static func flatpak(_ appID: String) throws(KeychainError) -> KeychainTrustedApplication {
        try KeychainTrustedApplication("flatpak:" + appID)
    }

    /// The snap `name`.
    public static func snap(_ name: String) throws(KeychainError) -> KeychainTrustedApplication {
        try KeychainTrustedApplication("snap:" + name)
    }

    /// Every program with an access group of team `teamID` (`TEAMID.…`; for keychaind, the groups registered with
    /// `security app add`): macOS's `teamid:` partition.
    public static func team(_ teamID: String) throws(KeychainError) -> KeychainTrustedApplication {
        try KeychainTrustedApplication("teamid:" + teamID)
    }

    /// Any program of the user (macOS's `-A`). Not recommended: the item is then protected only from other users.
    public static let anyApplication = KeychainTrustedApplication(checked: TrustedApplications.anyProgram)

    /// The `security` tool (macOS's `apple-tool:` partition). As the user's admin tool it reads every item anyway;
    /// the entry is kept for scripts written for macOS.
    public static let securityTool = KeychainTrustedApplication(checked: TrustedApplications.appleTool)

    /// ``term``.
    public var description: String { term }

    /// The list as an item's attribute (`xtap`) holds it.
    static func attributeValue(_ list: [KeychainTrustedApplication]) -> AttributeValue {
        .string(list.map(\.term).joined(separator: "\n"))
    }

    /// The list an item's attributes hold (empty when none).
    static func list(_ attributes: [String: AttributeValue]) -> [KeychainTrustedApplication] {
        TrustedApplications(stored: attributes[TrustedApplications.code])?.terms.map(KeychainTrustedApplication.init(checked:)) ?? []
    }
}

extension KeychainItem {
    /// The item's trusted applications (see ``KeychainTrustedApplication``); empty when it has none.
    public var trustedApplications: [KeychainTrustedApplication] {
        guard case .string(let joined)? = attributes[TrustedApplications.code] else { return [] }
        return KeychainTrustedApplication.list([TrustedApplications.code: .string(joined)])
    }

    /// The attribute code of an item's trusted applications in ``attributes``: give it to
    /// ``KeychainStore/addItem(_:attributes:data:)`` or ``KeychainStore/updateItems(matching:attributes:data:)`` as
    /// ``trustedApplicationsValue(_:)`` makes it.
    public static let trustedApplicationsCode = TrustedApplications.code

    /// The attribute value of a list of trusted applications (an empty list removes an item's list in an update).
    public static func trustedApplicationsValue(_ list: [KeychainTrustedApplication]) -> Value {
        .string(list.map(\.term).joined(separator: "\n"))
    }
}
