import Foundation
import KeychainTestSupport
import Testing
import KeychainClient
@testable import KeychainCore

/// A generic password with no access control (the default accessibility, WhenUnlocked), found by `dataQuery`.
private func plainPassword(_ account: String) -> ItemQuery {
    var q = ItemQuery(itemClass: .genericPassword)
    q.attributes = ["acct": .string(account), "svce": .string("presence"), "labl": .string("mail")]
    q.valueData = Data("secret-\(account)".utf8)
    return q
}

/// Unlocking on first use through keychaind (KeychainDaemon/LockedKeychainPrompt.swift): an item request that meets
/// the keychain locked asks for the passcode through the keychain's pinentry (the scripted one here), unlocks and is
/// served; a wrong passcode is asked again up to three times; no prompt when the request forbids one or none can
/// be shown.
@Suite(.enabled(if: settingsMayNameATestPinentry, "a keychain setting names only a pinentry only root can change: the scripted one is, only when the tests run as root"))
struct LockedKeychainPromptTests {
    /// A keychain with the passcode 1234 and one WhenUnlocked item, served by a real keychaind and locked.
    private func lockedKeychain() throws -> (TestKeychain, ScriptedPrompts, any KeychainConnection) {
        let kc = try TestKeychain(.daemon)
        let prompts = try ScriptedPrompts(kc)
        let connection = kc.connection()
        _ = try connection.add(plainPassword("a"))
        try kc.engine.changePasscode(from: nil, to: "1234")
        try connection.lock()
        #expect(try connection.status().lockState == .locked)
        return (kc, prompts, connection)
    }

    private func failures(_ kc: TestKeychain) throws -> UInt32? {
        let keybag = try Data(contentsOf: URL(fileURLWithPath: kc.engine.location.keybagPath))
        return try Keybag.throttle(in: [UInt8](keybag), deviceKey: kc.engine.deviceKey())?.failures
    }

    @Test func aLockedKeychainAsksForThePasscodeUnlocksAndServesTheRequest() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        try prompts.queue("pin 0000", "pin 1234")
        #expect(try connection.find(dataQuery("a")).first?.data == Data("secret-a".utf8))
        #expect(prompts.starts == 2)
        #expect(prompts.log.contains("GETPIN"))
        #expect(prompts.log.contains("wants to use your keychain, which is locked"))
        // The second prompt says why it asks again; the answer is never logged by keychaind.
        #expect(prompts.log.contains("SETERROR The passcode is not correct."))
        #expect(try connection.status().lockState == .unlocked)
        #expect(!(kc.daemon?.output.contains("1234") ?? true))
        // Unlocked: the next request asks nothing.
        #expect(try connection.find(dataQuery("a")).first?.data == Data("secret-a".utf8))
        #expect(prompts.starts == 2)
        #expect(try failures(kc) ?? 0 == 0)
    }

    @Test func threeWrongPasscodesFailWithAuthFailedAndCountInTheThrottle() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        try prompts.queue("pin 1", "pin 2", "pin 3", "pin 1234")
        expectKeychainError(.authenticationFailed, status: .authFailed) { _ = try connection.find(dataQuery("a")) }
        #expect(prompts.starts == 3)
        #expect(try connection.status().lockState == .locked)
        #expect(try failures(kc) == 3)
    }

    @Test func aCancelledPromptFailsWithUserCanceledAndLeavesItLocked() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        defer { withExtendedLifetime(kc) {} }
        try prompts.queue("cancel")
        expectKeychainError(.userCanceled, status: .userCanceled) { _ = try connection.find(dataQuery("a")) }
        #expect(prompts.starts == 1)
        #expect(try connection.status().lockState == .locked)
    }

    @Test func aRequestThatForbidsPromptsFailsAsBeforeWithoutOne() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        defer { withExtendedLifetime(kc) {} }
        try prompts.queue("pin 1234")
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            _ = try connection.find(dataQuery("a", ui: .fail))
        }
        var context = dataQuery("a")
        context.authentication.interactionNotAllowed = true
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.find(context) }
        #expect(prompts.starts == 0)
        #expect(try connection.status().lockState == .locked)
    }

    @Test func withNoPinentryTheRequestFailsWithInteractionNotAllowed() throws {
        let (kc, _, connection) = try lockedKeychain()
        try KeychainSettings(pinentryProgram: "/nonexistent/pinentry").save(kc.engine.location)
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) { _ = try connection.find(dataQuery("a")) }
        #expect(try connection.status().lockState == .locked)
    }

    @Test func anAddToALockedKeychainIsServedAfterTheUnlock() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        defer { withExtendedLifetime(kc) {} }
        try prompts.queue("pin 1234")
        _ = try connection.add(plainPassword("b"))
        #expect(prompts.starts == 1)
        #expect(try connection.find(dataQuery("b")).first?.data == Data("secret-b".utf8))
    }

    @Test func aRequestNamingTheLoginKeychainAsksToo() throws {
        let (kc, prompts, connection) = try lockedKeychain()
        defer { withExtendedLifetime(kc) {} }
        try prompts.queue("pin 1234")
        var named = dataQuery("a")
        named.keychains = [.login]
        #expect(try connection.find(named).first?.data == Data("secret-a".utf8))
        #expect(prompts.starts == 1)
        #expect(try connection.status().lockState == .unlocked)
    }
}
