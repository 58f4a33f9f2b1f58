import Crypto
import Foundation
import KeychainTestSupport
import Testing
@testable import KeychainCore

/// A keychain folder of its own for one test, removed when the test ends.
final class ConsentFolder: @unchecked Sendable {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("consents-\(UUID().uuidString)").path
    var location: KeychainLocation { KeychainLocation(home: path) }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A real engine on the folder (a fixed clock, no TPM, the testing passcode cost).
    func engine(now: Date = Date(timeIntervalSinceReferenceDate: 800_000_000)) throws -> KeychainEngine {
        try KeychainEngine(location: location, now: { now }, tpm: nil, passcodePolicy: .testing)
    }
}

/// The store of remembered answers to "allow PROGRAM to use SUBJECT?" (`apps.consents`): its format, what a
/// program that edits the file can and cannot do, its bound, and that a changed executable starts afresh.
@Suite struct ConsentRegistryTests {
    static let foo = AppRegistration.Program.executable(path: "/usr/bin/foo", sha256: String(repeating: "a1", count: 32))
    static let rebuiltFoo = AppRegistration.Program.executable(path: "/usr/bin/foo", sha256: String(repeating: "b2", count: 32))
    static let flat = AppRegistration.Program.flatpak("org.example.Flat")
    static let date = Date(timeIntervalSinceReferenceDate: 780_000_000)

    static func decision(
        _ program: AppRegistration.Program, _ subject: String, _ verdict: ConsentDecision.Verdict,
        date: Date = date
    ) -> ConsentDecision {
        ConsentDecision(program: program, subject: subject, subjectDescription: "the \(subject) item", verdict: verdict, date: date)
    }

    @Test func decisionsRoundTripThroughTheFile() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        #expect(try engine.consents() == [])
        #expect(!FileManager.default.fileExists(atPath: folder.location.consentsPath), "nothing is written before a decision")
        let made = [
            Self.decision(Self.foo, "0a0b", .always), Self.decision(Self.flat, "/org/freedesktop/secrets/collection/login", .deny),
            Self.decision(.snap("tool"), "x", .always),
        ]
        for decision in made { try engine.rememberConsent(decision) }
        // Deciding again replaces the decision (and moves it last).
        let changed = Self.decision(Self.foo, "0a0b", .deny, date: Self.date + 60)
        try engine.rememberConsent(changed)
        try engine.close()

        let reopened = try folder.engine()
        #expect(try reopened.consents() == [made[1], made[2], changed])
        #expect(try reopened.rememberedConsent(for: Self.foo, subject: "0a0b") == changed)
        #expect(try reopened.rememberedConsent(for: Self.foo, subject: "other") == nil)
        // The file is private and sealed: no subject or description appears in it.
        let bytes = try #require(try FileSystem.read(folder.location.consentsPath))
        #expect(Array(bytes.prefix(5)) == Array("KCAC".utf8) + [1])
        #expect(!String(decoding: bytes, as: UTF8.self).contains("freedesktop"))
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.location.consentsPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func theFormatIsFixedByAGoldenVector() throws {
        let registry = ConsentRegistry(decisions: [
            Self.decision(Self.foo, "0a0b", .always),
            Self.decision(Self.flat, "/org/freedesktop/secrets/collection/login", .deny, date: Self.date + 1.5),
        ])
        let key = ConsentRegistry.key(classKey: SymmetricKey(data: [UInt8](repeating: 0x07, count: 32)))
        let bytes = try registry.encode(key: key, random: CountingRandom(seed: 0x20))
        #expect(hex(bytes) == Golden.consentsV1)
        #expect(try ConsentRegistry.decode(Data(unhex(Golden.consentsV1)), key: key) == registry)
    }

    /// A program of the same user can write the file but not its key: whatever it writes is ignored by the
    /// decision (asked again, never granted) and reported by listing.
    @Test func anEditedOrForgedFileGrantsNothing() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.rememberConsent(Self.decision(Self.foo, "s", .deny))
        let path = folder.location.consentsPath
        let good = try #require(try FileSystem.read(path))

        // 1. A flipped byte anywhere.
        for index in [0, 4, 5, good.count / 2, good.count - 1] {
            var edited = good
            edited[index] ^= 0x01
            try FileSystem.writeAtomically(edited, to: path, exclusive: false)
            expectKeychainError(.corruptData, status: .decode) { try engine.consents() }
            #expect(try engine.rememberedConsent(for: Self.foo, subject: "s") == nil, "byte \(index)")
        }
        // 2. A well-formed file sealed under a key of the forger's own, granting itself `always`.
        let forged = try ConsentRegistry(decisions: [Self.decision(Self.foo, "s", .always)])
            .encode(key: SymmetricKey(size: .bits256), random: SystemRandom())
        try FileSystem.writeAtomically(forged, to: path, exclusive: false)
        let listed = expectKeychainError(.corruptData, status: .decode) { try engine.consents() }
        #expect(listed?.message.contains("apps.consents was not written by this keychain") == true)
        #expect(try engine.rememberedConsent(for: Self.foo, subject: "s") == nil)
        let person = ScriptedPerson(.answered(.once))
        let request = ConsentRequest(program: Self.foo, programDescription: "/usr/bin/foo (pid 1)", subject: "s", subjectDescription: "it")
        expectKeychainError(.interactionNotAllowed, status: .interactionNotAllowed) {
            try engine.applicationConsent(request, prompter: person, interactionAllowed: false)
        }
        #expect(try engine.applicationConsent(request, prompter: person, interactionAllowed: true) == .once)
        #expect(person.prompts.count == 1, "the forged `always` was not believed: the person was asked")
        // 3. Another sealed file of the same keychain passed off as this one (the program registry).
        try engine.updateAppRegistry { $0.register(AppRegistration(program: Self.foo, applicationIdentifier: nil, accessGroups: ["g"])) }
        try FileSystem.writeAtomically(try #require(try FileSystem.read(folder.location.registryPath)), to: path, exclusive: false)
        expectKeychainError(.corruptData) { try engine.consents() }
        // Revoking reports the damage; the next decision replaces the file.
        expectKeychainError(.corruptData) { try engine.revokeConsents(named: "/usr/bin/foo") }
        try engine.rememberConsent(Self.decision(Self.flat, "t", .always))
        #expect(try engine.consents() == [Self.decision(Self.flat, "t", .always)])
        // 4. A link planted where the file goes is refused, never followed.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: folder.location.registryPath)
        expectKeychainError(.io) { try engine.consents() }
    }

    @Test func aChangedExecutableInheritsNothing() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.rememberConsent(Self.decision(Self.foo, "s", .always))
        #expect(try engine.rememberedConsent(for: Self.foo, subject: "s")?.verdict == .always)
        #expect(try engine.rememberedConsent(for: Self.rebuiltFoo, subject: "s") == nil)
        let person = ScriptedPerson(.answered(.deny))
        let rebuilt = ConsentRequest(program: Self.rebuiltFoo, programDescription: "/usr/bin/foo (rebuilt)", subject: "s", subjectDescription: "it")
        expectKeychainError(.authenticationFailed, status: .authFailed) {
            try engine.applicationConsent(rebuilt, prompter: person, interactionAllowed: true)
        }
        #expect(person.prompts.count == 1)
        // Both versions' decisions are kept apart, and revoking by path forgets every version's.
        #expect(try engine.rememberedConsent(for: Self.foo, subject: "s")?.verdict == .always)
        #expect(try engine.rememberedConsent(for: Self.rebuiltFoo, subject: "s")?.verdict == .deny)
        #expect(try engine.revokeConsents(named: "/usr/bin/foo") == 2)
        #expect(try engine.consents() == [])
    }

    @Test func revokingByProgramAndSubject() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        for decision in [
            Self.decision(Self.foo, "a", .always), Self.decision(Self.foo, "b", .deny), Self.decision(Self.flat, "a", .always),
            Self.decision(.snap("org.example.Flat"), "a", .deny),
        ] {
            try engine.rememberConsent(decision)
        }
        #expect(try engine.revokeConsents(named: "/usr/bin/foo", subject: "b") == 1)
        #expect(try engine.revokeConsents(named: "/usr/bin/foo", subject: "b") == 0)
        #expect(try engine.revokeConsents(named: "/usr/bin") == 0, "a path names one program, not a folder")
        // A name matches every kind of program it can be (a snap and a Flatpak of the same name).
        #expect(try engine.revokeConsents(named: "org.example.Flat") == 2)
        #expect(try engine.consents() == [Self.decision(Self.foo, "a", .always)])
    }

    @Test func theStoreIsBounded() throws {
        var registry = ConsentRegistry()
        for n in 0..<ConsentRegistry.maximumDecisions {
            try registry.remember(Self.decision(Self.foo, "subject-\(n)", .always))
        }
        let refused = expectKeychainError(.invalidParameter, status: .param) { try registry.remember(Self.decision(Self.foo, "one-more", .always)) }
        #expect(refused?.message.contains("4096") == true)
        #expect(refused?.message.contains("security app revoke") == true)
        // Changing a decision already remembered is not one more.
        try registry.remember(Self.decision(Self.foo, "subject-7", .deny))
        #expect(registry.decisions.count == ConsentRegistry.maximumDecisions)
        #expect(registry.decision(for: Self.foo, subject: "subject-7")?.verdict == .deny)

        // A full file in a real keychain: a new `always` answer lets this request go on, unremembered.
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.updateConsentRegistry(replacingDamaged: false) { $0 = registry }
        expectKeychainError(.invalidParameter) { try engine.rememberConsent(Self.decision(Self.flat, "new", .always)) }
        let person = ScriptedPerson(.answered(.always))
        let request = ConsentRequest(program: Self.flat, programDescription: "flatpak org.example.Flat", subject: "new", subjectDescription: "it")
        #expect(try engine.applicationConsent(request, prompter: person, interactionAllowed: true) == .once)
        #expect(try engine.consents().count == ConsentRegistry.maximumDecisions)
        // A file claiming more decisions than the bound does not open.
        let over = ConsentRegistry(decisions: registry.decisions + [Self.decision(Self.flat, "x", .deny)])
        try FileSystem.writeAtomically(try over.encode(key: engine.consentKey(), random: SystemRandom()), to: folder.location.consentsPath, exclusive: false)
        expectKeychainError(.corruptData) { try engine.consents() }
    }

    @Test func decisionsAreSealedUntilTheFirstUnlock() throws {
        let folder = ConsentFolder()
        let engine = try folder.engine()
        try engine.changePasscode(from: nil, to: "1234")
        try engine.rememberConsent(Self.decision(Self.foo, "s", .always))
        try engine.close()
        let rebooted = try folder.engine()
        let locked = expectKeychainError(.interactionNotAllowed) { try rebooted.consents() }
        #expect(locked?.message.contains("security unlock-keychain") == true)
        try rebooted.unlock(passcode: "1234")
        #expect(try rebooted.consents().count == 1)
    }
}
