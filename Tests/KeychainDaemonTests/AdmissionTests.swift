import KeychainDaemon
import Testing

/// keychaind admits connections within its limits so that no user, and no number of users each within their own
/// limit, shuts another user out (issue 30).
struct AdmissionTests {
    static let limits = ConnectionLimits(
        connections: 64, connectionsPerUser: 40, bufferedBytes: 1 << 20,
        unreservedFrameBytes: 1 << 10, frameTimeout: .seconds(1), sendTimeout: .seconds(1))

    @Test func aUserAtItsLimitIsRefusedAndOthersAreServed() {
        let budget = ResourceBudget(limits: Self.limits)
        for _ in 0..<40 { #expect(budget.admit(uid: 1000) == nil) }
        #expect(budget.admit(uid: 1000) == "user 1000 already has 40 connections to keychaind")
        #expect(budget.admit(uid: 1001) == nil)
        budget.release(uid: 1000)
        #expect(budget.admit(uid: 1000) == nil)
    }

    @Test func usersWithinTheirLimitsTogetherLeaveRoomForAnotherUser() {
        let budget = ResourceBudget(limits: Self.limits)
        // Two users fill everything but the reserve (64 / 8 = 8 connections).
        for _ in 0..<28 { #expect(budget.admit(uid: 1000) == nil) }
        for _ in 0..<28 { #expect(budget.admit(uid: 1001) == nil) }
        #expect(budget.admit(uid: 1000) == "keychaind keeps its last 8 connections for users with fewer than 4, and user 1000 has 28")
        // Two more users still get their few connections each; then keychaind is full.
        for _ in 0..<4 { #expect(budget.admit(uid: 1002) == nil) }
        #expect(budget.admit(uid: 1002) == "keychaind keeps its last 8 connections for users with fewer than 4, and user 1002 has 4")
        for _ in 0..<4 { #expect(budget.admit(uid: 1003) == nil) }
        #expect(budget.admit(uid: 1004) == "keychaind already serves 64 connections")
    }
}
