import Foundation
import KeychainTestSupport
import Synchronization
import Testing
@testable import KeychainCore

/// The person at the machine, scripted: a `PresencePrompter` that records every prompt it is shown and gives the
/// scripted answers in turn (the last one again when they run out).
///
/// This stands in for the *person*, not for the part under test: the decision logic, the store and its file are
/// the real ones. The real prompter (pinentry, in KeychainPrompt) is not on this branch; what these tests need
/// from it is exactly whether a prompt was started, with which text, and what came back.
final class ScriptedPerson: PresencePrompter {
    private let state: Mutex<(answers: [PromptOutcome<ConsentAnswer>], prompts: [PromptText])>

    init(_ answers: PromptOutcome<ConsentAnswer>...) {
        state = Mutex((answers, []))
    }

    /// Every consent prompt shown so far.
    var prompts: [PromptText] { state.withLock { $0.prompts } }

    func askConsent(_ text: PromptText) -> PromptOutcome<ConsentAnswer> {
        state.withLock { state in
            state.prompts.append(text)
            guard let next = state.answers.first else { return .unavailable("no answer scripted") }
            if state.answers.count > 1 { state.answers.removeFirst() }
            return next
        }
    }

    func askSecret(_ text: PromptText) -> PromptOutcome<Data> {
        Issue.record("the consent decision asked for a secret")
        return .unavailable("not scripted")
    }

    func confirm(_ text: PromptText) -> PromptOutcome<Bool> {
        Issue.record("the consent decision asked a yes/no question")
        return .unavailable("not scripted")
    }
}

/// "Allow PROGRAM to use SUBJECT?": what is remembered, when a prompt is started, and the `OSStatus` of each
/// outcome, against a real engine and its `apps.consents`.
@Suite struct ApplicationConsentTests {
    static let program = AppRegistration.Program.executable(path: "/usr/bin/mail-client", sha256: String(repeating: "c3", count: 32))
    static let request = ConsentRequest(
        program: program, programDescription: "/usr/bin/mail-client (pid 4242, sha256 c3c3c3c3c3c3)",
        subject: "67656e70ab", subjectDescription: "the password of alice@example.com")
    static let decided = Date(timeIntervalSinceReferenceDate: 800_000_000)

    @Test func aRememberedAlwaysAllowsWithoutAPrompt() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.rememberConsent(ConsentDecision(program: Self.program, subject: Self.request.subject, subjectDescription: "x", verdict: .always, date: Self.decided))
        let person = ScriptedPerson(.answered(.deny))
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) == .remembered)
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: false) == .remembered)
        #expect(person.prompts.isEmpty, "no prompt started")
    }

    @Test func aRememberedDenyRefusesWithoutAPrompt() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.rememberConsent(ConsentDecision(program: Self.program, subject: Self.request.subject, subjectDescription: "x", verdict: .deny, date: Self.decided))
        let person = ScriptedPerson(.answered(.always))
        for interaction in [true, false] {
            let error = expectKeychainError(.authenticationFailed, status: .authFailed) {
                try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: interaction)
            }
            #expect(error?.message.contains("security app revoke") == true)
        }
        #expect(person.prompts.isEmpty, "no prompt started")
    }

    @Test func nothingRememberedAndNoInteractionIsInteractionNotAllowedWithoutAPrompt() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.always))
        let error = expectKeychainError(.interactionNotAllowed, status: KeychainStatus(-25308)) {
            try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: false)
        }
        #expect(error?.message.contains("/usr/bin/mail-client") == true)
        #expect(person.prompts.isEmpty, "no prompt started")
        #expect(try engine.consents() == [])
    }

    @Test func theFirstPromptNamesTheProgramAndTheSubject() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.once))
        _ = try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true)
        let text = try #require(person.prompts.first)
        #expect(text.description.contains(Self.request.programDescription))
        #expect(text.description.contains(Self.request.subjectDescription))
        #expect(text.prompt == nil)
    }

    @Test func onceAllowsAndIsNotRemembered() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.once))
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) == .once)
        #expect(try engine.consents() == [])
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) == .once)
        #expect(person.prompts.count == 2, "asked again")
    }

    @Test func alwaysAllowsAndIsRemembered() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.always))
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) == .always)
        #expect(
            try engine.consents() == [
                ConsentDecision(
                    program: Self.program, subject: Self.request.subject,
                    subjectDescription: Self.request.subjectDescription, verdict: .always, date: Self.decided)
            ])
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: false) == .remembered)
        #expect(person.prompts.count == 1)
        // Another subject of the same program is asked about on its own.
        var other = Self.request
        other.subject = "67656e70cd"
        expectKeychainError(.interactionNotAllowed) { try engine.applicationConsent(other, prompter: person, interactionAllowed: false) }
    }

    @Test func denyRefusesAndIsRemembered() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.deny), .answered(.always))
        let first = expectKeychainError(.authenticationFailed, status: .authFailed) {
            try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true)
        }
        #expect(try engine.consents().map(\.verdict) == [.deny])
        let second = expectKeychainError(.authenticationFailed, status: .authFailed) {
            try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true)
        }
        #expect(person.prompts.count == 1, "the refusal was remembered")
        #expect(first?.message == second?.message, "a program cannot tell a remembered refusal from a fresh one")
        // Revoked, the program is asked again.
        #expect(try engine.revokeConsents(named: "/usr/bin/mail-client", subject: Self.request.subject) == 1)
        #expect(try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) == .always)
        #expect(person.prompts.count == 2)
    }

    @Test(arguments: [PromptOutcome<ConsentAnswer>.cancelled, .timedOut])
    func aPromptWithoutAnAnswerIsUserCanceledAndNotRemembered(outcome: PromptOutcome<ConsentAnswer>) throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(outcome)
        expectKeychainError(.userCanceled, status: KeychainStatus(-128)) {
            try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true)
        }
        #expect(try engine.consents() == [])
        expectKeychainError(.userCanceled) { try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true) }
        #expect(person.prompts.count == 2, "asked again")
    }

    @Test func noPrompterIsInteractionNotAllowedWithTheReason() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.unavailable("No pinentry program was found. Install pinentry-gnome3 or pinentry-curses."))
        let error = expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            try engine.applicationConsent(Self.request, prompter: person, interactionAllowed: true)
        }
        #expect(error?.message.contains("Install pinentry-gnome3 or pinentry-curses.") == true)
        #expect(try engine.consents() == [])
    }

    @Test func aBadSubjectIsRefusedBeforeAnything() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        let person = ScriptedPerson(.answered(.always))
        var empty = Self.request
        empty.subject = ""
        expectKeychainError(.invalidParameter, status: .param) { try engine.applicationConsent(empty, prompter: person, interactionAllowed: true) }
        var long = Self.request
        long.subjectDescription = String(repeating: "x", count: ConsentRequest.maximumLength + 1)
        expectKeychainError(.invalidParameter, status: .param) { try engine.applicationConsent(long, prompter: person, interactionAllowed: true) }
        #expect(person.prompts.isEmpty)
    }

    @Test func userCanceledIsApplesStatus() {
        #expect(KeychainError.Code.userCanceled.defaultStatus == .userCanceled)
        #expect(KeychainStatus.userCanceled.rawValue == -128)
    }
}
