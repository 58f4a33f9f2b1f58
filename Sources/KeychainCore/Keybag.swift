import Foundation
import Crypto

/// A source of random bytes; injected so the on-disk formats can be pinned by golden vectors.
package protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

/// The system's cryptographically secure generator.
package struct SystemRandom: RandomSource {
    package init() {}
    package func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// The keybag: one random class key per protection class plus the metadata key, each wrapped for storage.
///
/// File format, version 1 (all integers big-endian):
/// ```
/// magic "SKKB" | u16 version = 1 | 16-byte keybag UUID | u8 KDF kind (0 = none) | u32-prefixed KDF parameters
/// u8 entry count | entries…
/// entry: u8 key id | u8 wrap kind (1 = device key) | u32-prefixed wrapped key
/// wrapped key: 12-byte nonce | 32-byte AES-256-GCM ciphertext | 16-byte tag
///              AAD = "swift-keychain keybag v1" | UUID | key id | wrap kind
/// ```
/// Key ids: protection classes use `ProtectionClass.keybagID` (1…7), the metadata key is 0x80.
/// The passcode (next issue) adds a KDF and wrap kind 2 (device key + passcode) without a format break.
package struct Keybag: Sendable {
    package static let magic: [UInt8] = Array("SKKB".utf8)
    package static let version: UInt16 = 1
    package static let metadataKeyID: UInt8 = 0x80
    static let aadLabel: [UInt8] = Array("swift-keychain keybag v1".utf8)

    /// How a key in the keybag is wrapped.
    package enum WrapKind: UInt8, Sendable {
        /// By the device key alone.
        case deviceKey = 1
    }

    package let uuid: [UInt8]
    package let classKeys: [ProtectionClass: SymmetricKey]
    package let metadataKey: SymmetricKey

    package init(uuid: [UInt8], classKeys: [ProtectionClass: SymmetricKey], metadataKey: SymmetricKey) {
        self.uuid = uuid
        self.classKeys = classKeys
        self.metadataKey = metadataKey
    }

    /// A new keybag with fresh random keys.
    package static func generate(random: any RandomSource = SystemRandom()) -> Keybag {
        var keys: [ProtectionClass: SymmetricKey] = [:]
        let uuid = random.bytes(16)
        for cls in ProtectionClass.allCases { keys[cls] = SymmetricKey(data: random.bytes(32)) }
        return Keybag(uuid: uuid, classKeys: keys, metadataKey: SymmetricKey(data: random.bytes(32)))
    }

    static func aad(uuid: [UInt8], id: UInt8, wrap: WrapKind) -> [UInt8] {
        aadLabel + uuid + [id, wrap.rawValue]
    }

    /// Serializes the keybag, wrapping every key with `deviceKey`.
    package func encode(deviceKey: SymmetricKey, random: any RandomSource = SystemRandom()) throws(KeychainError) -> [UInt8] {
        var w = BinaryWriter(capacity: 600)
        w.raw(Keybag.magic)
        w.u16(Keybag.version)
        w.raw(uuid)
        w.u8(0)
        w.lengthPrefixed([UInt8]())
        let entries: [(UInt8, SymmetricKey)] = ProtectionClass.allCases.compactMap { cls in
            classKeys[cls].map { (cls.keybagID, $0) }
        } + [(Keybag.metadataKeyID, metadataKey)]
        w.u8(UInt8(entries.count))
        for (id, key) in entries {
            let wrapped = try Seal.seal(key.withUnsafeBytes { Array($0) }, key: deviceKey,
                                        aad: Keybag.aad(uuid: uuid, id: id, wrap: .deviceKey), random: random)
            w.u8(id)
            w.u8(WrapKind.deviceKey.rawValue)
            w.lengthPrefixed(wrapped)
        }
        return w.bytes
    }

    /// Parses and unwraps a keybag. A truncated, foreign or tampered file fails with `errSecDecode`.
    package static func decode(_ bytes: some Sequence<UInt8>, deviceKey: SymmetricKey) throws(KeychainError) -> Keybag {
        let corrupt = KeychainError(code: .corruptData, message: "The keybag in KEYCHAIN_HOME is damaged or was made with another device key. Restore it and device.key from a backup, or move the keychain folder away to start a new, empty keychain.")
        var r = BinaryReader(bytes)
        do {
            guard Array(try r.take(4)) == magic else { throw corrupt }
            let version = try r.u16()
            guard version == Keybag.version else {
                throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: "The keybag has format version \(version), which this swift-keychain does not understand. Upgrade swift-keychain.")
            }
            let uuid = Array(try r.take(16))
            _ = try r.u8()
            _ = try r.lengthPrefixed()
            let count = try r.u8()
            var classKeys: [ProtectionClass: SymmetricKey] = [:]
            var metadataKey: SymmetricKey?
            for _ in 0 ..< count {
                let id = try r.u8()
                guard let wrap = WrapKind(rawValue: try r.u8()) else { throw corrupt }
                let wrapped = try r.lengthPrefixed()
                guard let raw = try? Seal.open(wrapped, key: deviceKey, aad: aad(uuid: uuid, id: id, wrap: wrap)),
                      raw.count == 32 else { throw corrupt }
                if id == metadataKeyID {
                    metadataKey = SymmetricKey(data: raw)
                } else if let cls = ProtectionClass(keybagID: id) {
                    classKeys[cls] = SymmetricKey(data: raw)
                }
            }
            guard r.isAtEnd, let metadataKey, classKeys.count == ProtectionClass.allCases.count else { throw corrupt }
            return Keybag(uuid: uuid, classKeys: classKeys, metadataKey: metadataKey)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw corrupt
        }
    }
}

/// AES-256-GCM sealing in the one layout every format here uses: nonce ‖ ciphertext ‖ tag.
package enum Seal {
    package static let overhead = 28

    package static func seal(_ plaintext: some DataProtocol, key: SymmetricKey, aad: some DataProtocol,
                             random: any RandomSource = SystemRandom()) throws(KeychainError) -> [UInt8] {
        do {
            let nonce = try AES.GCM.Nonce(data: random.bytes(12))
            let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
            var out = [UInt8]()
            out.reserveCapacity(box.ciphertext.count + overhead)
            out.append(contentsOf: box.nonce)
            out.append(contentsOf: box.ciphertext)
            out.append(contentsOf: box.tag)
            return out
        } catch {
            throw KeychainError(code: .internal, message: "Encryption failed unexpectedly.", cause: nil)
        }
    }

    /// Opens a sealed box; any failure (truncation, tampering, wrong key or AAD) is `errSecDecode`.
    package static func open(_ sealed: some Collection<UInt8>, key: SymmetricKey, aad: some DataProtocol) throws(KeychainError) -> [UInt8] {
        let bytes = Array(sealed)
        guard bytes.count >= overhead else {
            throw KeychainError(code: .corruptData, message: "Stored data is truncated.")
        }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: bytes[0 ..< 12]),
                                            ciphertext: bytes[12 ..< bytes.count - 16],
                                            tag: bytes[(bytes.count - 16)...])
            return Array(try AES.GCM.open(box, using: key, authenticating: aad))
        } catch {
            throw KeychainError(code: .corruptData, message: "Stored data failed authentication: it was damaged or tampered with.")
        }
    }
}
