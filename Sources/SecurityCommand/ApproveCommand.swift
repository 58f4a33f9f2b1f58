import ArgumentParser
import Foundation
import KeychainKit

/// `security approve`: lists the requests keychaind holds for the person's approval, and answers one.
struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "List the requests waiting for your approval, or answer one.",
        discussion: """
            When a program asks keychaind for something only you may allow (another program's secret, registering a \\
            program, changing a setting, a backup) and no prompt can ask you where it runs (no display, no terminal, \\
            no pinentry), the request waits, for the prompt timeout, for you to answer it here. Without ID, prints one \\
            waiting request per line: its ID, the program as keychaind identified it, what it wants, and how long it \\
            has waited and may still wait. With ID, allows it once (or always with --always, or refuses it with \\
            --deny, both remembered for that program): keychaind asks for the keychain's passcode with its own \\
            pinentry on this terminal first, never on standard input. Approving needs a passcode (any program of \\
            yours can type into a terminal it opened, so only the passcode proves it is you); with none set, run the \\
            waiting command from a desktop session or a terminal instead.
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "approve"

    @Argument(help: ArgumentHelp("The request to answer, as listed.", valueName: "id"))
    var id: UInt64?

    @Flag(name: .long, help: "Allow it, and remember that for this program.")
    var always = false

    @Flag(name: .long, help: "Refuse it, and remember that for this program.")
    var deny = false

    func validate() throws {
        if always && deny { throw ValidationError("--always and --deny are two different answers: give one.") }
        if (always || deny) && id == nil { throw ValidationError("--always and --deny answer a request: give its ID (`security approve` lists them).") }
    }

    func run() async throws {
        let keychain = try ToolContext.keychain(function: Self.function)
        do {
            guard let id else {
                let pending = try keychain.pendingApprovals()
                guard !pending.isEmpty else {
                    Output.standardOutput("No request waits for approval.\n")
                    return
                }
                Output.standardOutput(pending.map { "\($0.id)  \(printable($0.program)) wants to \(printable($0.action))  (waiting \($0.waited)s, \($0.remaining)s left)\n" }.joined())
                return
            }
            try keychain.answerPendingApproval(id: id, always ? .always : deny ? .deny : .once)
            Output.standardOutput(deny ? "Request \(id) refused.\n" : "Request \(id) allowed.\n")
        } catch {
            throw ToolFailure(Self.function, error)
        }
    }
}
