import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An item's trusted applications: the programs that may find and read it besides those of its access group —
/// macOS's `security add-generic-password -T app` and `-A`, and its partition lists (`set-…-partition-list -S`).
/// Ours, not Apple's data-protection keychain's: `kSecAttrAccessGroup` still decides who owns an item.
///
/// A trusted program may find the item and read its attributes and secret (macOS's ACL trusts its applications for
/// *decrypt*); it may not update or delete it, nor change the list: those stay with the programs of the item's
/// access group and the user's admin tool. An item protected by an access control still asks for the user's presence.
///
/// Each entry is one of these terms:
/// - an absolute path (`/usr/bin/git-credential-keychain`), symlinks resolved: the program keychaind identifies by
///   that executable path (in a program's own process: the running executable's path), unless keychaind finds the
///   process untrusted (started with `LD_PRELOAD` and the like, traced, its executable replaced): such a process is
///   never a trusted path;
/// - `flatpak:APPID`, `snap:NAME`: that Flatpak app or snap, as keychaind identifies it;
/// - `teamid:TEAM`: every program whose access groups include one of that team prefix (`TEAM.…`: for keychaind, the
///   groups registered with `security app add`);
/// - `apple-tool:` (macOS's Apple tools): the `security` tool, which as the user's admin tool reads every item
///   anyway; `apple:` (Apple-signed programs): no program here. Both are kept so that scripts written for macOS
///   work and the listing shows what was set;
/// - `*`: any program of the user (`-A`), untrusted processes included.
///
/// Stored as the attribute `xtap` in the item's sealed attribute record (the terms joined by newlines), and
/// each term's keyed hash in the `trusted_apps` table, so that finding the items a program is trusted for is an
/// index lookup and the database names no program in the clear.
package struct TrustedApplications: Sendable, Hashable {
    /// The terms, in the order given, without repeats.
    package private(set) var terms: [String]

    /// The schema code of the attribute that holds the list.
    package static let code = "xtap"
    /// The table of keyed hashes: one row per term of each item (`tbl` the item's class table, `h` the term's hash
    /// in that table, `item` its rowid).
    package static let indexTable = "trusted_apps"
    /// The term of `-A`: any program of the user.
    package static let anyProgram = "*"
    /// The term of macOS's partition of Apple's command-line tools: here the `security` tool.
    package static let appleTool = "apple-tool:"
    /// The term of macOS's partition of Apple-signed programs: none here.
    package static let apple = "apple:"
    /// The most terms one item may carry.
    package static let maximumCount = 64
    /// The longest term accepted, in UTF-8 bytes (a path as Linux allows one).
    package static let maximumLength = 4_096

    /// The list of `terms`, after checking each (`errSecParam` for a term that is none of the forms above, a
    /// relative path, a path with `.` or `..` components, a newline or NUL, or too many terms). Empty terms are
    /// left out (`-T ""`: no other application).
    package init(_ terms: [String]) throws(KeychainError) {
        var seen = Set<String>()
        var kept: [String] = []
        for term in terms where !term.isEmpty {
            try Self.check(term)
            if seen.insert(term).inserted { kept.append(term) }
        }
        guard kept.count <= Self.maximumCount else {
            throw .param("An item may trust at most \(Self.maximumCount) applications; \(kept.count) were given.")
        }
        self.terms = kept
    }

    /// The list an item stores (`xtap`), or nil when it has none or the value is malformed.
    package init?(stored value: AttributeValue?) {
        guard case .string(let joined)? = value else { return nil }
        guard let list = try? TrustedApplications(joined.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)),
            !list.terms.isEmpty
        else { return nil }
        self = list
    }

    /// Whether no program is trusted.
    package var isEmpty: Bool { terms.isEmpty }

    /// The stored form: the terms joined by newlines.
    package var attributeValue: AttributeValue { .string(terms.joined(separator: "\n")) }

    /// Refuses a term that is none of the documented forms.
    static func check(_ term: String) throws(KeychainError) {
        guard term.utf8.count <= maximumLength, !term.utf8.contains(0), !term.utf8.contains(0x0A) else {
            throw .param("A trusted application must be at most \(maximumLength) bytes, without a newline or NUL.")
        }
        if term == anyProgram || term == appleTool || term == apple { return }
        if term.hasPrefix("/") {
            let components = term.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard !components.contains(where: { $0 == "." || $0 == ".." || $0.isEmpty }), term != "/" else {
                throw .param("A trusted application's path must be absolute and plain (no '.', '..' or '//'; symlinks resolved): \(term)")
            }
            return
        }
        for prefix in ["flatpak:", "snap:", "teamid:"] where term.hasPrefix(prefix) {
            let name = term.dropFirst(prefix.count)
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
                throw .param("'\(term)' is not a trusted application: after '\(prefix)' give a name of letters, digits, '.', '_' or '-'.")
            }
            return
        }
        throw .param("'\(term)' is not a trusted application: give an absolute path, flatpak:APPID, snap:NAME, teamid:TEAM, apple-tool:, apple: or * (any program).")
    }

    /// The team of an access group in Apple's form, `TEAM.rest` with a ten-character team ID of capital letters
    /// and digits; nil for any other group (a path, a Flatpak ID).
    package static func team(ofGroup group: String) -> String? {
        guard let dot = group.firstIndex(of: "."), group.index(after: dot) != group.endIndex else { return nil }
        let team = group[..<dot]
        guard team.count == 10, team.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else { return nil }
        return String(team)
    }

    /// The terms a caller is known by, besides `*`: its program's (`program`, when it can be trusted) and the
    /// `teamid:` of each of its groups.
    package static func callerTerms(program: String?, groups: [String]) -> [String] {
        var terms = [anyProgram]
        if let program { terms.append(program) }
        var teams = Set<String>()
        for group in groups {
            if let team = team(ofGroup: group), teams.insert(team).inserted { terms.append("teamid:" + team) }
        }
        return terms
    }

    /// The running executable's path, symlinks resolved (`/proc/self/exe`): what a program's own process is
    /// trusted as. Read once.
    package static let thisExecutable: String? = {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), path.hasPrefix("/"),
            !path.hasSuffix(" (deleted)")
        else { return nil }
        return path
    }()

    /// `path` with symlinks resolved (`realpath`), for a term naming a program; nil when there is no such file.
    package static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
