import ArgumentParser
import Foundation
import KeychainKit

/// `security authorize --reset`: makes the keychain forget every proof of the user's presence it holds.
struct Authorize: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize",
        abstract: "Manage the keychain's authorizations (proofs of the user's presence).",
        discussion: """
            A read of an item with an access control (add-generic-password --access-control) asks for the user's \
            presence, and the proof may serve the same program's later reads under the same authentication context \
            for a while (LAContext's reuse duration, at most 300 seconds). --reset forgets every such proof, for \
            every program, so the next read asks again, and prints how many contexts held one. macOS's \
            authorization-database rights (authorize <right>) have no counterpart here.
            """
    )

    /// The function name failures print.
    static let function = "SecItemResetAuthorizations"

    @Flag(name: .customLong("reset"), help: "Forget every granted authorization (proof of presence) the keychain holds.")
    var reset = false

    func validate() throws {
        guard reset else { throw ValidationError("Give --reset: forgetting every authorization is the one action here.") }
    }

    func run() async throws {
        let count: Int
        do {
            count = try ToolContext.keychain(function: Self.function).resetAuthorizations()
        } catch let error as KeychainError {
            throw ToolFailure(Self.function, error)
        }
        Output.standardOutput("\(count) authorization context\(count == 1 ? "" : "s") forgotten.\n")
    }
}
