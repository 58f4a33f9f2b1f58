import Foundation

/// A request waiting in keychaind for the person's approval because no prompt could ask them (no display, no
/// terminal, no pinentry), as `security approve` lists it. The person approves it from a terminal of theirs, giving
/// the keychain's passcode to keychaind's own prompt there.
package struct PendingApproval: Sendable, Hashable {
    /// keychaind's number for it, unique while keychaind runs.
    package var id: UInt64
    /// The requesting program, as keychaind identified it.
    package var program: String
    /// What it wants to do ("use your confidential information stored in …").
    package var action: String
    /// How many seconds it has waited so far.
    package var waited: Int
    /// How many seconds are left before it is refused.
    package var remaining: Int

    package init(id: UInt64, program: String, action: String, waited: Int, remaining: Int) {
        self.id = id
        self.program = program
        self.action = action
        self.waited = waited
        self.remaining = remaining
    }
}
