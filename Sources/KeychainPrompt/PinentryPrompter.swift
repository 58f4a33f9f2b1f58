import Foundation
import KeychainCore
import Logging

/// The person at this machine, asked through pinentry (GnuPG's PIN entry programs, over the Assuan protocol).
///
/// Each prompt starts a fresh pinentry (``PinentryProcess``), sends the texts (`SETTITLE`, `SETDESC`, `SETPROMPT`,
/// `SETERROR`, the button labels, `SETTIMEOUT`), asks (`GETPIN` or `CONFIRM`), says `BYE` and reaps it. One prompt
/// is shown at a time: a second caller waits for its turn (in arrival order) for at most the timeout, and then has
/// the whole timeout for its own prompt; a caller whose turn does not come in time gets ``PromptOutcome/timedOut``
/// without anything shown.
///
/// How answers map:
/// - `GETPIN`: `D` lines then `OK` → ``PromptOutcome/answered(_:)`` with the bytes (never logged; empty when the
///   person entered nothing).
/// - `CONFIRM`: `OK` → `true`; `ERR 83886194` (not confirmed, the not-ok button) → `false`.
/// - `ERR 83886179` (cancelled: the cancel button, Escape, the window closed) → ``PromptOutcome/cancelled``, as is
///   a pinentry that closes the connection or exits before answering.
/// - The deadline passing (the pinentry's own `SETTIMEOUT` answering `ERR …62`, or this side's hard deadline, at
///   which the pinentry's process group is killed with `SIGKILL` and reaped) → ``PromptOutcome/timedOut``.
/// - No program, a program that cannot be started, one that refuses a text or fails to show its window (another
///   `ERR`, such as no display and no terminal), or one that breaks the protocol (a line over 1000 bytes, more
///   than 8 KiB of data, a malformed line) → ``PromptOutcome/unavailable(_:)`` with the reason; the process is
///   killed and reaped.
///
/// ``askConsent(_:)`` needs four ends (once, always, deny, and cancelled, which a closed window must give and
/// which remembers nothing), and one `CONFIRM` has three, the third of which is the one closing the window gives.
/// So consent takes two steps in one pinentry session: "Allow" / "Deny" / "Cancel"; after "Allow", "Always
/// allow" / "Only this time" / "Cancel". Only the deliberate not-ok button "Deny" gives ``ConsentAnswer/deny``;
/// cancelling or closing either step gives ``PromptOutcome/cancelled``.
package final class PinentryPrompter: PresencePrompter {
    /// The program, or why there is none.
    package let choice: PinentryChoice
    /// How long one prompt may stay open (and how long a caller waits for its turn).
    package let timeout: Duration
    private let environment: [String: String]
    private let options: [String]
    private let logger: Logger
    private let turns = PromptTurns()

    /// The timeout when none is configured: 60 seconds.
    package static let defaultTimeout: Duration = .seconds(60)
    /// The shortest and longest timeouts accepted (1 second to 10 minutes); others are brought within.
    package static let timeoutRange: ClosedRange<Duration> = .seconds(1) ... .seconds(600)

    /// A prompter running `choice`, stopping each prompt after `timeout` (brought within ``timeoutRange``).
    /// `environment` is what the pinentry's environment is drawn from (``PinentryProcess/environment(from:)``) and
    /// its terminal and locale options (`GPG_TTY`, else the terminal on this process's standard input; `TERM`;
    /// `LC_ALL`, `LC_CTYPE` or `LANG`).
    package init(
        choice: PinentryChoice, timeout: Duration = PinentryPrompter.defaultTimeout,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "swift-keychain")
    ) {
        self.choice = choice
        self.timeout = min(max(timeout, Self.timeoutRange.lowerBound), Self.timeoutRange.upperBound)
        self.environment = PinentryProcess.environment(from: environment)
        self.logger = logger
        var options: [String] = []
        if let tty = environment["GPG_TTY"].flatMap({ $0.isEmpty ? nil : $0 }) ?? Self.terminalOnStandardInput() {
            options.append("ttyname=" + tty)
        }
        if let term = environment["TERM"], !term.isEmpty { options.append("ttytype=" + term) }
        if let ctype = ["LC_ALL", "LC_CTYPE", "LANG"].lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) {
            options.append("lc-ctype=" + ctype)
        }
        self.options = options
    }

    /// The terminal on this process's standard input, if it is one (`ttyname_r`).
    private static func terminalOnStandardInput() -> String? {
        guard isatty(0) != 0 else { return nil }
        var name = [CChar](repeating: 0, count: 256)
        guard ttyname_r(0, &name, name.count) == 0 else { return nil }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A prompter for the keychain's settings: the program from ``PinentryChoice/resolve(settings:environment:)``
    /// and the settings' `promptTimeout` (seconds), else ``defaultTimeout``.
    package convenience init(
        settings: KeychainSettings?, environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "swift-keychain")
    ) {
        self.init(
            choice: PinentryChoice.resolve(settings: settings, environment: environment),
            timeout: settings?.promptTimeout.map { .seconds($0) } ?? Self.defaultTimeout,
            environment: environment, logger: logger)
    }

    /// Asks for a secret with `GETPIN`; the answer is the entered bytes (UTF-8), never logged.
    package func askSecret(_ text: PromptText) -> PromptOutcome<Data> {
        prompt(text, buttons: []) { session, deadline throws(AssuanError) -> PromptOutcome<Data> in
            switch try session.transact("GETPIN", deadline: deadline) {
            case .ok(var bytes):
                defer { for index in bytes.indices { bytes[index] = 0 } }
                return .answered(Data(bytes))
            case .error(let code, let message):
                return Self.failure(code: code, text: message, command: "GETPIN")
            }
        }
    }

    /// Asks for a yes or no with `CONFIRM` (pinentry's OK and cancel buttons): OK is `true`, a not-ok answer
    /// `false`, cancel or a closed window ``PromptOutcome/cancelled``.
    package func confirm(_ text: PromptText) -> PromptOutcome<Bool> {
        prompt(text, buttons: []) { session, deadline throws(AssuanError) -> PromptOutcome<Bool> in
            try Self.confirmation(session, deadline: deadline)
        }
    }

    /// Asks "allow?" in two `CONFIRM` steps (see the type's description): "Deny" gives ``ConsentAnswer/deny``;
    /// "Allow" then "Only this time" ``ConsentAnswer/once``, or "Always allow" ``ConsentAnswer/always``; cancelling
    /// or closing either step ``PromptOutcome/cancelled``.
    package func askConsent(_ text: PromptText) -> PromptOutcome<ConsentAnswer> {
        let first = [("SETOK", "_Allow"), ("SETNOTOK", "_Deny"), ("SETCANCEL", "_Cancel")]
        return prompt(text, buttons: first) { session, deadline throws(AssuanError) -> PromptOutcome<ConsentAnswer> in
            switch try Self.confirmation(session, deadline: deadline) {
            case .answered(false): return .answered(.deny)
            case .answered(true): break
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            case .unavailable(let why): return .unavailable(why)
            }
            let remember =
                "Remember this answer?\n\n\(text.description)\n\n"
                + "\"Always allow\" lets it do this again without asking. \"Only this time\" asks again next time."
            for (verb, value) in [("SETDESC", remember), ("SETOK", "Al_ways allow"), ("SETNOTOK", "_Only this time"), ("SETCANCEL", "_Cancel")] {
                if case .error(let code, let message) = try session.transact(Assuan.command(verb, value), deadline: deadline) {
                    return Self.failure(code: code, text: message, command: verb)
                }
            }
            switch try Self.confirmation(session, deadline: deadline) {
            case .answered(let always): return .answered(always ? .always : .once)
            case .cancelled: return .cancelled
            case .timedOut: return .timedOut
            case .unavailable(let why): return .unavailable(why)
            }
        }
    }

    // MARK: One prompt

    /// `CONFIRM`: OK is true, not confirmed is false.
    private static func confirmation(_ session: PinentryProcess, deadline: ContinuousClock.Instant) throws(AssuanError) -> PromptOutcome<Bool> {
        switch try session.transact("CONFIRM", deadline: deadline) {
        case .ok: .answered(true)
        case .error(let code, _) where GPGError.code(code) == GPGError.notConfirmed: .answered(false)
        case .error(let code, let message): failure(code: code, text: message, command: "CONFIRM")
        }
    }

    /// What an `ERR` means (apart from "not confirmed" to `CONFIRM`, which is a "no"): cancelled, or "not
    /// confirmed" to anything else (the person declined), is ``PromptOutcome/cancelled``; pinentry's own timeout is
    /// ``PromptOutcome/timedOut``; any other error means the prompt could not be shown.
    private static func failure<Value>(code: UInt32, text: String, command: String) -> PromptOutcome<Value> {
        switch GPGError.code(code) {
        case GPGError.canceled, GPGError.notConfirmed: .cancelled
        case GPGError.timeout: .timedOut
        default:
            .unavailable(
                "The pinentry could not show the prompt: \(command) failed with \(text.isEmpty ? "an error" : text) (code \(code)). "
                    + "Without a display it needs a terminal: set GPG_TTY, or install and choose pinentry-curses.")
        }
    }

    /// Runs one prompt: waits for the turn, starts the pinentry, reads its greeting, sends the options and texts,
    /// runs `ask`, and ends the session (politely after an answer, by `SIGKILL` otherwise).
    private func prompt<Value>(
        _ text: PromptText, buttons: [(String, String)],
        ask: (PinentryProcess, ContinuousClock.Instant) throws(AssuanError) -> PromptOutcome<Value>
    ) -> PromptOutcome<Value> {
        guard case .program(let program) = choice else {
            if case .unavailable(let why) = choice { return .unavailable(why) }
            return .unavailable(PinentryChoice.installAdvice)
        }
        guard turns.acquire(until: ContinuousClock.now.advanced(by: timeout)) else {
            logger.notice("A prompt waited \(timeout) for the one before it and was not shown.")
            return .timedOut
        }
        defer { turns.release() }

        let deadline = ContinuousClock.now.advanced(by: timeout)
        let session: PinentryProcess
        do {
            session = try PinentryProcess.start(program: program, environment: environment)
        } catch {
            logger.error("The pinentry \(program) could not be started: \(error)")
            return .unavailable("The pinentry \(program) could not be started (\(error)). " + PinentryChoice.installAdvice)
        }
        logger.debug("Prompting with \(program), pid \(session.pid).")
        do {
            var greeting = try session.receive(deadline: deadline)
            for _ in 0..<8 where greeting.isInformational {
                greeting = try session.receive(deadline: deadline)
            }
            guard case .ok = greeting else {
                session.terminate()
                return .unavailable("\(program) did not greet with OK: it does not look like a pinentry.")
            }
            for option in options {
                _ = try session.transact(Assuan.command("OPTION", option), deadline: deadline)  // an unknown option is no reason to stop
            }
            let seconds = max(1, timeout.components.seconds)
            _ = try session.transact("SETTIMEOUT \(seconds)", deadline: deadline)  // a pinentry without a timeout still gets killed
            var texts = [("SETTITLE", text.title), ("SETDESC", text.description)]
            if let prompt = text.prompt { texts.append(("SETPROMPT", prompt)) }
            if let error = text.error { texts.append(("SETERROR", error)) }
            for (verb, value) in texts + buttons {
                if case .error(let code, let message) = try session.transact(Assuan.command(verb, value), deadline: deadline) {
                    session.finish()
                    return Self.failure(code: code, text: message, command: verb)
                }
            }
            let outcome = try ask(session, deadline)
            session.finish()
            logger.debug("The prompt by \(program) ended: \(Self.describe(outcome)).")
            return outcome
        } catch .timedOut {
            session.terminate()
            logger.notice("The prompt by \(program) was not answered within \(timeout); pid \(session.pid) was killed.")
            return .timedOut
        } catch .closed {
            session.terminate()
            logger.notice("The pinentry \(program) closed the connection before answering.")
            return .cancelled
        } catch {
            session.terminate()
            logger.warning("The pinentry \(program) broke the protocol (\(error)); pid \(session.pid) was killed.")
            return .unavailable("The pinentry \(program) broke the Assuan protocol: \(error).")
        }
    }

    /// An outcome's kind, for the log (never the answer).
    private static func describe<Value>(_ outcome: PromptOutcome<Value>) -> String {
        switch outcome {
        case .answered: "answered"
        case .cancelled: "cancelled"
        case .timedOut: "timed out"
        case .unavailable: "unavailable"
        }
    }
}

/// Turns at showing a prompt, first come first served, each waited for with a deadline.
final class PromptTurns: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [UInt64] = []
    private var busy = false
    private var nextTicket: UInt64 = 0

    /// Waits until no prompt is shown and every earlier caller has had its turn; false when `deadline` passes first.
    func acquire(until deadline: ContinuousClock.Instant) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let ticket = nextTicket
        nextTicket &+= 1
        queue.append(ticket)
        while busy || queue.first != ticket {
            let left = ContinuousClock.now.duration(to: deadline)
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            if left <= .zero || !condition.wait(until: Date(timeIntervalSinceNow: seconds)) && ContinuousClock.now >= deadline {
                queue.removeAll { $0 == ticket }
                condition.broadcast()
                return false
            }
        }
        queue.removeFirst()
        busy = true
        return true
    }

    /// Ends the current turn.
    func release() {
        condition.lock()
        busy = false
        condition.broadcast()
        condition.unlock()
    }
}
