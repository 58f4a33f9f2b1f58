import Foundation

/// One question "allow PROGRAM to use SUBJECT?": who asks and for what, as the keychain will show it.
///
/// The program and its description come from keychaind's identification of the calling process (the kernel's
/// view, ``AppRegistration/Program``), never from anything the client says about itself; the subject is whatever
/// the caller guards (an item, a Secret Service collection).
package struct ConsentRequest: Sendable, Hashable {
    /// The program, as identified: an executable's path and SHA-256, a Flatpak app ID, a snap name.
    package var program: AppRegistration.Program
    /// The program as the person should read it in the prompt (keychaind's description of the peer, e.g.
    /// `/usr/bin/foo (pid 42, sha256 0123456789ab)`).
    package var programDescription: String
    /// The opaque name decisions are remembered under: an item's persistent reference in hex, a collection's
    /// object path. At most ``maximumLength`` UTF-8 bytes, not empty.
    package var subject: String
    /// The subject as the person should read it (an item's label, a collection's name). At most
    /// ``maximumLength`` UTF-8 bytes.
    package var subjectDescription: String

    /// The longest subject or description accepted, in UTF-8 bytes (they are kept in `apps.consents` and shown in
    /// prompts and lists).
    package static let maximumLength = 1_024

    /// The question whether `program` (shown as `programDescription`) may use `subject` (shown as
    /// `subjectDescription`).
    package init(program: AppRegistration.Program, programDescription: String, subject: String, subjectDescription: String) {
        self.program = program
        self.programDescription = programDescription
        self.subject = subject
        self.subjectDescription = subjectDescription
    }

    /// The prompt that asks the person: it names the program and the subject, and what each answer does.
    package var promptText: PromptText {
        PromptText(
            title: "Allow access to the keychain?",
            description: """
                \(programDescription) wants to use \(subjectDescription).

                Allow it once, always (remembered for this program until revoked with `security app revoke`), or deny \
                (remembered as well)?
                """)
    }

    /// Refuses an empty or over-long subject and an over-long description (`errSecParam`).
    func validate() throws(KeychainError) {
        guard !subject.isEmpty, subject.utf8.count <= Self.maximumLength else {
            throw KeychainError(
                code: .invalidParameter,
                message:
                    "A consent subject must be 1 to \(Self.maximumLength) bytes of UTF-8; this one has \(subject.utf8.count). Name the subject by a short, stable identifier (a persistent reference in hex, an object path)."
            )
        }
        guard subjectDescription.utf8.count <= Self.maximumLength else {
            throw KeychainError(
                code: .invalidParameter,
                message: "A consent subject's description must be at most \(Self.maximumLength) bytes of UTF-8; this one has \(subjectDescription.utf8.count). Shorten the label shown to the person.")
        }
    }
}

/// How a consent question ended when the program may go on.
package enum ConsentGrant: Sendable, Hashable {
    /// Allowed by a remembered `always`, without a prompt.
    case remembered
    /// Allowed this time only: the person answered `once` (or `always` when it could not be remembered, for
    /// instance past ``ConsentRegistry/maximumDecisions``; the reason is logged). Nothing was stored.
    case once
    /// Allowed, and `always` was remembered for this program and subject.
    case always
}

extension KeychainEngine {
    /// Decides whether `request.program` may use `request.subject`, asking the person through `prompter` only when
    /// nothing is remembered and `interactionAllowed`.
    ///
    /// | remembered / answer | result | stored |
    /// |---|---|---|
    /// | `always` remembered | ``ConsentGrant/remembered``, no prompt | — |
    /// | `deny` remembered | `errSecAuthFailed`, no prompt | — |
    /// | nothing, interaction not allowed | `errSecInteractionNotAllowed` (-25308), no prompt | — |
    /// | `once` | ``ConsentGrant/once`` | nothing |
    /// | `always` | ``ConsentGrant/always`` | `always` |
    /// | `deny` | `errSecAuthFailed` (-25293) | `deny` |
    /// | cancelled, timed out | `errSecUserCanceled` (-128) | nothing |
    /// | prompter unavailable | `errSecInteractionNotAllowed`, with the prompter's reason | nothing |
    ///
    /// A refusal is `errSecAuthFailed`, as Apple's keychain reports a click on *Deny* in its "wants to use your
    /// confidential information" dialog; a remembered refusal gives the same code, so a program cannot tell
    /// whether the person was just asked. `errSecUserCanceled` is kept for a prompt that got no answer, which
    /// Apple's `SecItem` calls report when the person dismisses the authentication UI; it is never remembered, so
    /// the next request asks again.
    ///
    /// Decisions are remembered per exact program (an executable's path *and* SHA-256): a changed binary is asked
    /// again. A damaged or foreign `apps.consents` counts as nothing remembered (see
    /// ``rememberedConsent(for:subject:)``).
    ///
    /// - Throws: `errSecParam` for an empty or over-long subject or description; `errSecInteractionNotAllowed`
    ///   before the keychain's first unlock (the decisions are sealed under its class key); the outcomes above.
    package func applicationConsent(
        _ request: ConsentRequest, prompter: any PresencePrompter,
        interactionAllowed: Bool
    ) throws(KeychainError) -> ConsentGrant {
        try request.validate()
        if let remembered = try rememberedConsent(for: request.program, subject: request.subject) {
            switch remembered.verdict {
            case .always: return .remembered
            case .deny: throw Self.consentRefused(request)
            }
        }
        guard interactionAllowed else {
            throw KeychainError(
                code: .interactionNotAllowed,
                message:
                    "\(request.programDescription) needs the person's permission to use \(request.subjectDescription), and this request may not show a prompt. Ask again with interaction allowed, or have the person decide (their `always` is remembered)."
            )
        }
        switch prompter.askConsent(request.promptText) {
        case .answered(.once):
            return .once
        case .answered(.always):
            do {
                try rememberConsent(
                    ConsentDecision(
                        program: request.program, subject: request.subject, subjectDescription: request.subjectDescription,
                        verdict: .always, date: now()))
                return .always
            } catch {
                // The person allowed it: this request goes on; the next one asks again.
                logger.warning("an `always` answer could not be remembered", metadata: ["reason": "\(error.message)"])
                return .once
            }
        case .answered(.deny):
            do {
                try rememberConsent(
                    ConsentDecision(
                        program: request.program, subject: request.subject, subjectDescription: request.subjectDescription,
                        verdict: .deny, date: now()))
            } catch {
                logger.warning("a `deny` answer could not be remembered", metadata: ["reason": "\(error.message)"])
            }
            throw Self.consentRefused(request)
        case .cancelled:
            throw KeychainError(
                code: .userCanceled,
                message: "The person cancelled the prompt asking whether \(request.programDescription) may use \(request.subjectDescription). Nothing was remembered; try again to be asked again.")
        case .timedOut:
            throw KeychainError(
                code: .userCanceled,
                message:
                    "Nobody answered the prompt asking whether \(request.programDescription) may use \(request.subjectDescription) in time. Nothing was remembered; try again when someone is at the machine."
            )
        case .unavailable(let reason):
            throw KeychainError(code: .interactionNotAllowed, message: "No prompt could ask whether \(request.programDescription) may use \(request.subjectDescription): \(reason)")
        }
    }

    /// The refusal of `request` (`errSecAuthFailed`), the same whether it was remembered before or just now.
    static func consentRefused(_ request: ConsentRequest) -> KeychainError {
        KeychainError(
            code: .authenticationFailed,
            message:
                "The person refused to let \(request.programDescription) use \(request.subjectDescription), and the refusal is remembered. To be asked again, revoke it with `security app revoke PROGRAM --subject SUBJECT` (`security app consents` lists them)."
        )
    }
}
