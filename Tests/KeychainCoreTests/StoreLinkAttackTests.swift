import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks with symbolic links planted in a keychain folder (issue 14, "Files and sockets"): a link where one of
/// the keychain's files belongs must never make the keychain write through it (overwriting, creating or
/// re-permissioning the file it points at) nor read through it (taking someone else's device key, keybag,
/// settings or registry). Every file the store opens is opened `O_NOFOLLOW`; SQLite's files are checked before
/// SQLite opens them.
@Suite struct StoreLinkAttackTests {
    /// A private (0700) keychain folder and, beside it, the victim file a planted link points at.
    struct Scene {
        let root: String
        let location: KeychainLocation
        let victim: String
        /// A path nothing exists at: a link to it shows whether the keychain creates files through links.
        let nowhere: String
        static let original = Data(repeating: 0x41, count: 32)  // 32 bytes: shaped like a device key

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("store-links-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(
                atPath: root + "/home", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            location = KeychainLocation(home: root + "/home")
            victim = root + "/victim"
            nowhere = root + "/created-through-a-link"
            try Scene.original.write(to: URL(fileURLWithPath: victim))
            #expect(chmod(victim, 0o644) == 0)
        }

        func plant(_ name: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(atPath: location.home + "/" + name, withDestinationPath: target)
        }

        /// The victim has its bytes and mode, and nothing was created at `nowhere`.
        func expectUntouched(_ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Scene.original, comment, sourceLocation: sourceLocation)
            let mode = try FileManager.default.attributesOfItem(atPath: victim)[.posixPermissions] as? Int
            #expect(mode == 0o644, comment, sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: nowhere), comment, sourceLocation: sourceLocation)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    /// The files opening a keychain reads or creates: a link at any of them is refused with `errSecIO`, and
    /// neither the file it points at nor a missing target is touched. Without `O_NOFOLLOW`, the lock file and
    /// the database were created through a dangling link, SQLite wrote its WAL into the victim, and a planted
    /// `device.key` became the keychain's device key.
    @Test(arguments: [
        "keychain-2.db", "keychain-2.db-wal", "keychain-2.db-shm", "keychain-2.db-journal",
        "keychain.lock", "device.key", "keychain.keybag",
    ])
    func aLinkAtAFileOpeningReadsOrCreatesIsRefused(name: String) throws {
        for dangling in [false, true] {
            let scene = try Scene()
            defer { scene.remove() }
            try scene.plant(name, to: dangling ? scene.nowhere : scene.victim)
            let error = expectKeychainError(.io, status: .io, "\(name) → \(dangling ? "nowhere" : "victim")") {
                let engine = try KeychainEngine(location: scene.location)
                var query = ItemQuery(itemClass: .genericPassword)
                query.valueData = Data("x".utf8)
                _ = try engine.add(query, caller: AccessPolicy(groups: ["g"]))
                try engine.close()
            }
            #expect(error?.message.contains("is a symbolic link") == true, "\(error?.message ?? "")")
            try scene.expectUntouched("\(name) → \(dangling ? "nowhere" : "victim")")
        }
    }

    /// The files an open keychain reads and rewrites later (settings, program registry, passcode throttle): a
    /// link there is never read through (`errSecIO`), and writing replaces the link instead of the file it names.
    @Test func linksAtSettingsRegistryAndThrottleAreNeitherReadNorWrittenThrough() throws {
        let scene = try Scene()
        defer { scene.remove() }
        let engine = try KeychainEngine(location: scene.location)
        defer { try? engine.close() }

        // Settings: a victim that is a valid settings plist would otherwise set the keychain's lock policy.
        let settings = KeychainSettings.path(scene.location)
        try scene.plant(NSString(string: settings).lastPathComponent, to: scene.victim)
        expectKeychainError(.io, status: .io) { _ = try KeychainSettings.load(scene.location) }
        try KeychainSettings(idleTimeout: 5).save(scene.location)
        try scene.expectUntouched("settings")
        #expect(try FileManager.default.destinationOfSymbolicLinkIfAny(settings) == nil, "the link was replaced by the settings file")
        #expect(try KeychainSettings.load(scene.location)?.idleTimeout == 5)

        // Program registry: read before every change, so a change is refused too.
        try scene.plant(NSString(string: scene.location.registryPath).lastPathComponent, to: scene.victim)
        expectKeychainError(.io, status: .io) { _ = try engine.appRegistry() }
        expectKeychainError(.io, status: .io) { try engine.updateAppRegistry { _ in } }
        try scene.expectUntouched("registry")

        // Passcode throttle: a version-3 keybag keeps the count inside itself, so a link where the old count file
        // was is neither read nor written: a wrong passcode is just that.
        try engine.changePasscode(from: nil, to: "correct horse")
        engine.lock()
        try scene.plant(NSString(string: scene.location.throttlePath).lastPathComponent, to: scene.nowhere)
        expectKeychainError(.authenticationFailed, status: .authFailed) { try engine.unlock(passcode: "wrong") }
        try scene.expectUntouched("throttle")
    }
}

extension FileManager {
    /// Where the symbolic link at `path` points, or nil when `path` is not a link.
    fileprivate func destinationOfSymbolicLinkIfAny(_ path: String) throws -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return nil }
        return try destinationOfSymbolicLink(atPath: path)
    }
}
