import Foundation
import KeychainCore
@testable import KeychainSync
import Testing

/// The device's sync keys in its own keychain: sealed like every item, never synced, left out of backups.
@Suite("Sync keys in the keychain")
struct SyncKeyringTests {
    @Test("Device keys are made once and read back; zone keys are kept once each; neither leaves the device")
    func keys() throws {
        let home = FileManager.default.temporaryDirectory.path + "/sync-keyring-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: home) }
        let engine = try KeychainEngine(location: KeychainLocation(home: home), tpm: nil, passcodePolicy: .testing)
        let keyring = SyncKeyring(engine: engine)
        let device = try keyring.deviceKeys()
        #expect(try keyring.deviceKeys().publicKeys == device.publicKeys)
        // A second engine on the same keychain (another process) reads the same keys.
        let again = try SyncKeyring(engine: KeychainEngine(location: KeychainLocation(home: home), tpm: nil, passcodePolicy: .testing))
        #expect(try again.deviceKeys().publicKeys == device.publicKeys)

        let zone = SyncZoneKey()
        try keyring.save(zone)
        try keyring.save(zone)
        #expect(try keyring.zoneKeys().mapValues(\.key) == [zone.keyID: zone.key])

        // ThisDeviceOnly, in a group no program is given: not synchronizable, not eligible, not in a backup.
        let replica = SyncReplica(engine: engine, mirror: try SyncMirror(path: home + "/sync-mirror.sqlite"), device: "d")
        #expect(try replica.outgoingChanges().isEmpty)
        let backup = try engine.backup(password: "pw")
        let restoredHome = home + "-restored"
        defer { try? FileManager.default.removeItem(atPath: restoredHome) }
        let restored = try KeychainEngine(location: KeychainLocation(home: restoredHome), tpm: nil, passcodePolicy: .testing)
        _ = try restored.restore(backup.data, password: "pw")
        #expect(try SyncKeyring(engine: restored).zoneKeys().isEmpty)

        try keyring.removeAll()
        #expect(try keyring.zoneKeys().isEmpty)
        #expect(try keyring.deviceKeys().publicKeys != device.publicKeys)
    }
}
