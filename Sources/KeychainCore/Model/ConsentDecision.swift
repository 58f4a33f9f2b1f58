import Foundation

/// One remembered answer to "allow PROGRAM to use SUBJECT?": the person chose `always` or `deny` for this program
/// and this subject on ``date``. An answer of `once` is never remembered.
///
/// The program is identified as keychaind identified it (``AppRegistration/Program``): an executable by its path
/// *and* the SHA-256 of its contents, so a changed binary is another program and inherits none of these decisions;
/// a Flatpak by its app ID; a snap by its name.
package struct ConsentDecision: Sendable, Hashable {
    /// What was decided.
    package enum Verdict: String, Sendable, Hashable, CaseIterable {
        /// Allowed, now and later, without asking again.
        case always
        /// Refused, now and later, without asking again.
        case deny
    }

    /// The program the decision is for.
    package var program: AppRegistration.Program
    /// What it was allowed or refused, as the caller names it: an opaque string, such as an item's persistent
    /// reference in hex or a Secret Service collection's object path. Decisions are found by exact equality.
    package var subject: String
    /// The subject as the person saw it in the prompt, kept for listing (`security app consents`).
    package var subjectDescription: String
    /// Always or deny.
    package var verdict: Verdict
    /// When the person decided.
    package var date: Date

    /// The decision `verdict` about `program` and `subject`, made on `date`.
    package init(program: AppRegistration.Program, subject: String, subjectDescription: String, verdict: Verdict, date: Date) {
        self.program = program
        self.subject = subject
        self.subjectDescription = subjectDescription
        self.verdict = verdict
        self.date = date
    }

    /// Whether this decision is about exactly `program` (the same path and SHA-256, app ID or snap name) and `subject`.
    package func concerns(_ program: AppRegistration.Program, subject: String) -> Bool {
        self.program == program && self.subject == subject
    }

    /// Whether the program is the one `name` names: an executable's path (whatever its SHA-256), a Flatpak app ID
    /// or a snap name, as ``AppRegistry/remove(named:)`` matches them.
    package func programIsNamed(_ name: String) -> Bool {
        switch program {
        case .executable(let path, _): path == name
        case .flatpak(let id): id == name
        case .snap(let snap): snap == name
        }
    }

    var plist: PlistValue {
        var d = program.plistFields
        d["subject"] = .string(subject)
        d["description"] = .string(subjectDescription)
        d["verdict"] = .string(verdict.rawValue)
        d["date"] = .date(date)
        return .dictionary(d)
    }

    init?(plist: PlistValue) {
        guard case .dictionary(let d) = plist, let program = AppRegistration.Program(plistFields: d),
            case .string(let subject)? = d["subject"], case .string(let description)? = d["description"],
            case .string(let verdictName)? = d["verdict"], let verdict = Verdict(rawValue: verdictName),
            case .date(let date)? = d["date"]
        else { return nil }
        self.program = program
        self.subject = subject
        self.subjectDescription = description
        self.verdict = verdict
        self.date = date
    }
}
