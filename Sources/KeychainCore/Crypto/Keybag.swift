import CKeychainLinux
import Foundation
import Crypto
import CryptoExtras

/// A source of random bytes; injected so the on-disk formats can be pinned by golden vectors.
package protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

/// The system's cryptographically secure generator.
package struct SystemRandom: RandomSource {
    package init() {}
    /// `count` bytes from the kernel's generator (`getrandom`), asked for all at once: one system call for a key or
    /// a nonce, where drawing each byte from Swift's generator made one per byte (84 for an item's add).
    package func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else {
                initialized = 0
                return
            }
            var filled = 0
            while filled < count {
                let n = ckeychain_random(base + filled, UInt(count - filled))
                if n > 0 {
                    filled += n
                } else if n < 0, errno == EINTR {
                    continue
                } else {
                    // No getrandom (a kernel before 3.17): Swift's generator, which falls back to /dev/urandom.
                    var generator = SystemRandomNumberGenerator()
                    while filled < count {
                        base[filled] = UInt8.random(in: .min ... .max, using: &generator)
                        filled += 1
                    }
                }
            }
            initialized = count
        }
    }
}

/// The keybag: one random class key per protection class plus the metadata key, each wrapped for storage.
///
/// File format (all integers big-endian):
/// ```
/// magic "SKKB" | u16 version | 16-byte keybag UUID | u8 KDF kind | u32-prefixed KDF parameters
/// [version 3 only: u32-prefixed throttle record]
/// u8 entry count | entries…
/// entry: u8 key id | u8 wrap kind | u32-prefixed wrapped key
/// wrapped key: 12-byte nonce | 32-byte AES-256-GCM ciphertext | 16-byte tag
///              AAD = "swift-keychain keybag v1" | UUID | key id | wrap kind
/// ```
/// Version 1: no passcode; KDF kind 0 with empty parameters; every key wrapped by the device key (wrap kind 1).
/// Version 2 (read, no longer written): a passcode with KDF kind 1 = scrypt, `u8 log2(N) | u32 r | u32 p |
/// u32-prefixed salt`, tuned to about 100 ms from N = 2^14; the wrong-passcode count lives in `keychain.throttle`.
/// Version 3 (written while a passcode is set): KDF kind 2 = scrypt calibrated to at least 64 MiB and 250 ms, the
/// kind-1 parameters followed by `u32` measured milliseconds (see ``PasscodeKDF``); the wrong-passcode throttle is
/// the keybag's own sealed record (see ``PasscodeThrottle``), so deleting a file does not reset it.
/// In versions 2 and 3 the class keys other than `dk`/`dku` use wrap kind 2, whose key is
/// `HKDF-SHA256(ikm: device key, salt: scrypt(passcode), info: "swift-keychain passcode wrap v1")`.
/// Key ids: protection classes use `ProtectionClass.keybagID` (1…7), the metadata key is 0x80.
/// A version-2 keybag is rewritten as version 3, with freshly calibrated parameters, at its first unlock.
package struct Keybag: Sendable {
    package static let magic: [UInt8] = Array("SKKB".utf8)
    /// The format without a passcode.
    package static let version: UInt16 = 1
    /// The first format with a passcode (scrypt from N = 2^14, the throttle in a file): read, never written.
    package static let legacyPasscodeVersion: UInt16 = 2
    /// The format with a passcode: calibrated scrypt, the throttle inside.
    package static let passcodeVersion: UInt16 = 3
    package static let metadataKeyID: UInt8 = 0x80
    static let aadLabel: [UInt8] = Array("swift-keychain keybag v1".utf8)

    /// How a key in the keybag is wrapped.
    package enum WrapKind: UInt8, Sendable {
        /// By the device key alone.
        case deviceKey = 1
        /// By a key derived from the device key and the passcode.
        case deviceKeyAndPasscode = 2
    }

    /// Which keys a passcode protects: every class key but Always (`dk`, `dku`), which the device key alone
    /// protects so those items stay available before the first unlock.
    package static func protectedByPasscode(_ cls: ProtectionClass) -> Bool {
        cls != .always && cls != .alwaysThisDeviceOnly
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

    /// Serializes the keybag. Without `passcode` every key is wrapped by `deviceKey` (version 1); with one,
    /// the class keys other than `dk`/`dku` are wrapped by the device key combined with the passcode
    /// (version 3), and `passcode.parameters` and `throttle` are stored for the next unlock.
    package func encode(
        deviceKey: SymmetricKey, passcode: (secret: String, parameters: PasscodeKDF)? = nil,
        throttle: PasscodeThrottle = PasscodeThrottle(),
        random: any RandomSource = SystemRandom()
    ) throws(KeychainError) -> [UInt8] {
        let passcodeWrapKey = try passcode.map { (p) throws(KeychainError) in
            try Keybag.passcodeWrapKey(deviceKey: deviceKey, passcode: p.secret, parameters: p.parameters)
        }
        var w = BinaryWriter(capacity: 640)
        w.raw(Keybag.magic)
        w.u16(passcode == nil ? Keybag.version : Keybag.passcodeVersion)
        w.raw(uuid)
        if let passcode {
            w.u8(PasscodeKDF.calibratedScryptKind)
            w.lengthPrefixed(passcode.parameters.encodedCalibrated)
            w.lengthPrefixed(try throttle.sealed(deviceKey: deviceKey, keybagUUID: uuid, random: random))
        } else {
            w.u8(0)
            w.lengthPrefixed([UInt8]())
        }
        let entries: [(UInt8, SymmetricKey, Bool)] =
            ProtectionClass.allCases.compactMap { cls in
                classKeys[cls].map { (cls.keybagID, $0, Keybag.protectedByPasscode(cls)) }
            } + [(Keybag.metadataKeyID, metadataKey, false)]
        w.u8(UInt8(entries.count))
        for (id, key, usesPasscode) in entries {
            let (wrap, wrapKey): (WrapKind, SymmetricKey) =
                if usesPasscode, let passcodeWrapKey {
                    (.deviceKeyAndPasscode, passcodeWrapKey)
                } else {
                    (.deviceKey, deviceKey)
                }
            let wrapped = try Seal.seal(
                key.withUnsafeBytes { Array($0) }, key: wrapKey,
                aad: Keybag.aad(uuid: uuid, id: id, wrap: wrap), random: random)
            w.u8(id)
            w.u8(wrap.rawValue)
            w.lengthPrefixed(wrapped)
        }
        return w.bytes
    }

    /// The key that wraps passcode-protected class keys.
    static func passcodeWrapKey(deviceKey: SymmetricKey, passcode: String, parameters: PasscodeKDF) throws(KeychainError) -> SymmetricKey {
        let stretched = try parameters.derive(passcode)
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: deviceKey, salt: stretched.withUnsafeBytes { Array($0) },
            info: Array("swift-keychain passcode wrap v1".utf8), outputByteCount: 32)
    }

    /// What a keybag file says about itself before any key is unwrapped.
    package struct Header: Sendable {
        /// The format version.
        package var version: UInt16 = Keybag.version
        /// The passcode KDF, when a passcode is set.
        package var passcode: PasscodeKDF?
        /// The sealed wrong-passcode throttle (version 3).
        package var throttleRecord: ArraySlice<UInt8>?
        /// Where the entry count starts, for rewriting the header in front of unchanged entries.
        var entriesOffset = 0
        /// The KDF kind and its raw parameters, as read.
        var kdfKind: UInt8 = 0
        var kdfParameters: ArraySlice<UInt8> = []
    }

    /// The wrong-passcode throttle a version-3 keybag carries (none for other versions): nil when the record
    /// fails authentication (edited, or moved from another keybag), which the caller must count as the worst case.
    package static func throttle(in bytes: some Sequence<UInt8>, deviceKey: SymmetricKey) throws(KeychainError) -> PasscodeThrottle? {
        let (uuid, header, _) = try parse(bytes)
        guard let record = header.throttleRecord else { return PasscodeThrottle() }
        return PasscodeThrottle(sealed: record, deviceKey: deviceKey, keybagUUID: uuid)
    }

    /// The same version-3 keybag with `throttle` in place of its throttle record; the wrapped keys are copied
    /// unchanged (they cannot be re-wrapped without the passcode).
    package static func replacingThrottle(
        in bytes: some Sequence<UInt8>, with throttle: PasscodeThrottle, deviceKey: SymmetricKey,
        random: any RandomSource = SystemRandom()
    ) throws(KeychainError) -> [UInt8] {
        let all = Array(bytes)
        let (uuid, header, _) = try parse(all)
        guard header.version == passcodeVersion else { throw corrupt }
        var w = BinaryWriter(capacity: all.count + 16)
        w.raw(magic)
        w.u16(header.version)
        w.raw(uuid)
        w.u8(header.kdfKind)
        w.lengthPrefixed(header.kdfParameters)
        w.lengthPrefixed(try throttle.sealed(deviceKey: deviceKey, keybagUUID: uuid, random: random))
        w.raw(all[header.entriesOffset...])
        return w.bytes
    }

    /// Reads a keybag's header: whether a passcode is set, and its KDF parameters.
    package static func header(_ bytes: some Sequence<UInt8>) throws(KeychainError) -> Header {
        try parse(bytes).header
    }

    /// Parses and unwraps a keybag. Without `passcode`, the passcode-protected class keys of a version-2
    /// keybag stay wrapped and are absent from ``classKeys`` (the keychain is locked for those classes).
    /// A wrong passcode fails with `errSecAuthFailed`; a truncated, foreign or tampered file with `errSecDecode`.
    package static func decode(_ bytes: some Sequence<UInt8>, deviceKey: SymmetricKey, passcode: String? = nil) throws(KeychainError) -> Keybag {
        let parsed = try parse(bytes)
        let corrupt = Keybag.corrupt
        var passcodeWrapKey: SymmetricKey?
        if let passcode, let parameters = parsed.header.passcode {
            passcodeWrapKey = try Keybag.passcodeWrapKey(deviceKey: deviceKey, passcode: passcode, parameters: parameters)
        }
        var classKeys: [ProtectionClass: SymmetricKey] = [:]
        var metadataKey: SymmetricKey?
        for entry in parsed.entries {
            let key: SymmetricKey
            switch entry.wrap {
            case .deviceKey: key = deviceKey
            case .deviceKeyAndPasscode:
                guard let passcodeWrapKey else { continue }
                key = passcodeWrapKey
            }
            let raw: [UInt8]
            do {
                raw = try Seal.open(entry.wrapped, key: key, aad: aad(uuid: parsed.uuid, id: entry.id, wrap: entry.wrap))
            } catch {
                if entry.wrap == .deviceKeyAndPasscode {
                    throw KeychainError(code: .authenticationFailed, message: "The passcode is not correct.")
                }
                throw corrupt
            }
            guard raw.count == 32 else { throw corrupt }
            if entry.id == metadataKeyID {
                metadataKey = SymmetricKey(data: raw)
            } else if let cls = ProtectionClass(keybagID: entry.id) {
                classKeys[cls] = SymmetricKey(data: raw)
            }
        }
        guard let metadataKey else { throw corrupt }
        return Keybag(uuid: parsed.uuid, classKeys: classKeys, metadataKey: metadataKey)
    }

    static let corrupt = KeychainError(
        code: .corruptData,
        message: "The keybag in KEYCHAIN_HOME is damaged or was made with another device key. Restore it and device.key from a backup, or move the keychain folder away to start a new, empty keychain."
    )

    struct Entry {
        var id: UInt8
        var wrap: WrapKind
        var wrapped: ArraySlice<UInt8>
    }

    static func parse(_ bytes: some Sequence<UInt8>) throws(KeychainError) -> (uuid: [UInt8], header: Header, entries: [Entry]) {
        var r = BinaryReader(bytes, truncated: corrupt)
        guard Array(try r.take(4)) == magic else { throw corrupt }
        let version = try r.u16()
        guard version == Keybag.version || version == Keybag.legacyPasscodeVersion || version == Keybag.passcodeVersion else {
            throw KeychainError(
                code: .notAvailable, status: .wrongSecVersion, message: "The keybag has format version \(version), which this swift-keychain does not understand. Upgrade swift-keychain.")
        }
        let uuid = Array(try r.take(16))
        let kdfKind = try r.u8()
        let kdfParameters = try r.lengthPrefixed()
        var header = Header(version: version, kdfKind: kdfKind, kdfParameters: kdfParameters)
        switch (version, kdfKind) {
        case (Keybag.version, 0): break
        case (Keybag.legacyPasscodeVersion, PasscodeKDF.scryptKind):
            header.passcode = try PasscodeKDF(decoding: kdfParameters, kind: kdfKind)
        case (Keybag.passcodeVersion, PasscodeKDF.calibratedScryptKind):
            header.passcode = try PasscodeKDF(decoding: kdfParameters, kind: kdfKind)
            header.throttleRecord = try r.lengthPrefixed()
        default: throw corrupt
        }
        header.entriesOffset = r.offset
        let count = try r.u8()
        var entries: [Entry] = []
        var seen = Set<UInt8>()
        for _ in 0..<count {
            let id = try r.u8()
            guard let wrap = WrapKind(rawValue: try r.u8()), seen.insert(id).inserted else { throw corrupt }
            // A passcode-wrapped key in a keybag without a passcode KDF cannot be opened.
            if wrap == .deviceKeyAndPasscode, header.passcode == nil { throw corrupt }
            entries.append(Entry(id: id, wrap: wrap, wrapped: try r.lengthPrefixed()))
        }
        guard r.isAtEnd, seen.contains(metadataKeyID),
            ProtectionClass.allCases.allSatisfy({ seen.contains($0.keybagID) })
        else { throw corrupt }
        return (uuid, header, entries)
    }
}

/// AES-256-GCM sealing in the one layout every format here uses: nonce ‖ ciphertext ‖ tag.
package enum Seal {
    package static let overhead = 28

    package static func seal(
        _ plaintext: some DataProtocol, key: SymmetricKey, aad: some DataProtocol,
        random: any RandomSource = SystemRandom()
    ) throws(KeychainError) -> [UInt8] {
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

    /// Opens a sealed box held in `Data` (a column read from the store) without copying it first, returning the
    /// plaintext as `Data`; any failure (truncation, tampering, wrong key or AAD) is `errSecDecode`.
    package static func openData(_ sealed: Data, key: SymmetricKey, aad: some DataProtocol) throws(KeychainError) -> Data {
        guard sealed.count >= overhead else {
            throw KeychainError(code: .corruptData, message: "Stored data is truncated.")
        }
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: aad)
        } catch {
            throw KeychainError(code: .corruptData, message: "Stored data failed authentication: it was damaged or tampered with.")
        }
    }

    /// Opens a sealed box; any failure (truncation, tampering, wrong key or AAD) is `errSecDecode`.
    package static func open(_ sealed: some Collection<UInt8>, key: SymmetricKey, aad: some DataProtocol) throws(KeychainError) -> [UInt8] {
        guard sealed.count >= overhead else {
            throw KeychainError(code: .corruptData, message: "Stored data is truncated.")
        }
        do {
            // nonce | ciphertext | tag is swift-crypto's "combined" layout: one copy, no slicing.
            let box = try AES.GCM.SealedBox(combined: Data(sealed))
            return Array(try AES.GCM.open(box, using: key, authenticating: aad))
        } catch {
            throw KeychainError(code: .corruptData, message: "Stored data failed authentication: it was damaged or tampered with.")
        }
    }
}
