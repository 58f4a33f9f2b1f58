import ArgumentParser
import Foundation
import KeychainKit

/// `security app consents`: prints the programs' remembered permissions, one per line.
struct AppConsents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consents",
        abstract: "List what programs were allowed or refused for good.",
        discussion: """
            When a program asks for something the keychain guards by asking the person ("allow PROGRAM to use …?"), \\
            an answer of always or deny is remembered for that program and subject; once is not. Prints one \\
            decision per line, sorted by program, as fields separated by two spaces: the program (an executable's \\
            absolute path, flatpak:APPID or snap:NAME); for an executable, sha256= and the first 12 hex digits of \\
            the SHA-256 the decision is bound to (a changed binary is asked again); always or deny; the date it was \\
            decided (UTC, ISO 8601); subject= and the subject's identifier (what `security app revoke --subject` \\
            takes); and last the subject as the person saw it in the prompt. Control characters in names are shown \\
            as \\u{…} escapes. For example: "/usr/bin/foo  sha256=0123456789ab  always  2026-11-25T10:50:29Z  \\
            subject=/org/freedesktop/secrets/collection/login  Login". Prints nothing when nothing is remembered. \\
            Goes through keychaind when it is reachable (see `security help app`).
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "app consents"

    func run() async throws {
        let keychain = try ToolContext.keychain(function: Self.function)
        let decisions: [KeychainStore.ConsentDecision]
        do {
            decisions = try keychain.consentDecisions()
        } catch {
            throw ToolFailure(Self.function, error)
        }
        let lines = decisions.map { ($0.programName, $0.subject, $0.listLine) }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            .map { $0.2 + "\n" }
        Output.standardOutput(lines.joined())
    }
}

/// `security app revoke`: forgets a program's remembered permissions.
struct AppRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Forget what a program was allowed or refused for good.",
        discussion: """
            Names the program as `security app consents` shows it: an executable's path (a relative path or a \\
            symlink is resolved while the file exists; every SHA-256 recorded under the path is revoked), a \\
            Flatpak app ID or a snap name (with or without the flatpak: or snap: prefix). With --subject, only the \\
            decision about that subject (the value after subject= in the list) is forgotten. The program is asked \\
            again the next time. Prints "revoked N decision(s)". When nothing is remembered for the program (and \\
            subject), exits 44, as a lookup that finds nothing does.
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "app revoke"

    @Argument(help: ArgumentHelp("The program: its executable's path, Flatpak app ID or snap name.", valueName: "program"))
    var program: String

    @Option(name: .customLong("subject"), help: ArgumentHelp("Only the decision about this subject, as `security app consents` shows it after subject=.", valueName: "subject"))
    var subject: String?

    func validate() throws {
        guard !program.isEmpty else { throw ValidationError("Name the program: an executable's path, Flatpak app ID or snap name.") }
        if let subject, subject.isEmpty { throw ValidationError("--subject is empty; give the subject as `security app consents` shows it after subject=.") }
    }

    func run() async throws {
        let name = AppRemove.registryName(program)
        let keychain = try ToolContext.keychain(function: Self.function)
        let revoked: Int
        do {
            revoked = try keychain.revokeConsentDecisions(named: name, subject: subject)
        } catch {
            throw ToolFailure(Self.function, error)
        }
        guard revoked > 0 else {
            let about = subject.map { " about \(printable($0))" } ?? ""
            throw ToolFailure(
                Self.function, status: .itemNotFound,
                detail: "Nothing is remembered for \(printable(name))\(about); `security app consents` lists what is.")
        }
        Output.standardOutput("revoked \(revoked) decision\(revoked == 1 ? "" : "s")\n")
    }
}

extension KeychainStore.ConsentDecision {
    /// The program as `security app consents` prints it (as `security app list` does).
    var programName: String { program.name }

    /// The decision's `security app consents` line (without the newline), every name made printable.
    var listLine: String {
        var fields = [printable(programName)]
        if case .executable(_, let sha256) = program { fields.append("sha256=\(printable(String(sha256.prefix(12))))") }
        fields.append(decision.rawValue)
        fields.append(date.formatted(.iso8601))
        fields.append("subject=\(printable(subject))")
        fields.append(printable(subjectDescription))
        return fields.joined(separator: "  ")
    }
}

/// `text` with every control, format and line-separator character written as a `\u{…}` escape (and `\` as `\\`),
/// so that a name a program chose cannot start a new line, move the cursor or reorder the terminal's text.
func printable(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate:
            out += "\\u{\(String(scalar.value, radix: 16))}"
        default:
            if scalar == "\\" { out += "\\\\" } else { out.unicodeScalars.append(scalar) }
        }
    }
    return out
}
