import Crypto
import Foundation
import KeychainCore
import KeychainTestSupport
import Synchronization
import Testing

/// P-256 keys made inside a TPM (the Secure Enclave's part on Linux): they sign and agree keys as swift-crypto
/// expects, and their blobs are worth nothing without the TPM that made them.
@Suite(.enabled(if: SoftwareTPM.available, "needs swtpm (Debian packages swtpm, swtpm-tools)"))
struct TPMKeyTests {
    /// The failure's case, for comparing without its message.
    enum Outcome: Equatable {
        case unreachable, refused, failed
    }

    /// Expects `body` to throw the TPM failure `expected` (an issue is recorded otherwise).
    static func expectFailure<R>(_ expected: Outcome, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws(TPMDevice.Failure) -> R) {
        let outcome: Outcome
        do {
            _ = try body()
            Issue.record("expected the TPM failure \(expected), but nothing was thrown", sourceLocation: sourceLocation)
            return
        } catch {
            switch error {
            case .unreachable: outcome = .unreachable
            case .refused: outcome = .refused
            case .failed: outcome = .failed
            }
        }
        #expect(outcome == expected, sourceLocation: sourceLocation)
    }

    @Test func aKeyMadeInTheTPMSignsAsSwiftCryptoVerifies() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let key = try session.createKey()
        #expect(key.x963PublicKey.count == 65)
        #expect(key.x963PublicKey.first == 0x04)
        let publicKey = try P256.Signing.PublicKey(x963Representation: key.x963PublicKey)

        // A message (ecdsaSignatureMessageX962SHA256) and a digest (ecdsaSignatureDigestX962SHA256): DER signatures.
        let message = Data("sign me inside the TPM".utf8)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try session.sign(message: message, key: key))
        #expect(publicKey.isValidSignature(signature, for: message))
        #expect(!publicKey.isValidSignature(signature, for: Data("another message".utf8)))
        let digest = SHA256.hash(data: Data("a digest".utf8))
        let der = try session.sign(digest: Array(digest), key: key)
        #expect(der.first == 0x30, "a DER SEQUENCE")
        let digestSignature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(publicKey.isValidSignature(digestSignature, for: digest))
        // ECDSA is randomised: signing again gives another signature that verifies as well.
        let again = try session.sign(digest: Array(digest), key: key)
        #expect(again != der)
        let againSignature = try P256.Signing.ECDSASignature(derRepresentation: again)
        #expect(publicKey.isValidSignature(againSignature, for: digest))
        Self.expectFailure(.failed) { () throws(TPMDevice.Failure) in try session.sign(digest: [UInt8](repeating: 1, count: 20), key: key) }

        // Each key is its own.
        let other = try session.createKey()
        #expect(other.x963PublicKey != key.x963PublicKey)
        let otherSignature = try P256.Signing.ECDSASignature(derRepresentation: try session.sign(message: message, key: other))
        #expect(!publicKey.isValidSignature(otherSignature, for: message))
    }

    @Test func keyAgreementMatchesSwiftCrypto() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let key = try session.createKey()
        let peer = P256.KeyAgreement.PrivateKey()
        let inTPM = try session.sharedSecret(peerX963: Array(peer.publicKey.x963Representation), key: key)
        let software = try peer.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: key.x963PublicKey))
        #expect(inTPM.count == 32)
        let softwareBytes = software.withUnsafeBytes { Array($0) }
        #expect(inTPM == softwareBytes)
        // The same key also signs: one key for both, as a Secure Enclave key is.
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try session.sign(message: Data("both".utf8), key: key))
        let publicKey = try P256.Signing.PublicKey(x963Representation: key.x963PublicKey)
        #expect(publicKey.isValidSignature(signature, for: Data("both".utf8)))

        // A peer key that is not a point on P-256 (y changed), or not X9.63 at all, is refused before the TPM.
        var offCurve = Array(peer.publicKey.x963Representation)
        offCurve[64] ^= 0x01
        Self.expectFailure(.failed) { () throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: offCurve, key: key) }
        Self.expectFailure(.failed) { () throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: Array(peer.publicKey.compressedRepresentation), key: key) }
        Self.expectFailure(.failed) { () throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: [], key: key) }
    }

    @Test func aKeyMadeOnOneTPMIsRefusedByAnother() throws {
        let machineA = try SoftwareTPM()
        let machineB = try SoftwareTPM()
        let sessionA = try TPMSession(device: machineA.device)
        let sessionB = try TPMSession(device: machineB.device)
        let key = try sessionA.createKey()
        let digest = Array(SHA256.hash(data: Data("elsewhere".utf8)))
        let peer = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
        Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try sessionB.sign(digest: digest, key: key) }
        Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try sessionB.sharedSecret(peerX963: peer, key: key) }
        // The key still works where it was made, also from a new session (the same primary key, derived again).
        let sessionA2 = try TPMSession(device: machineA.device)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try sessionA2.sign(digest: digest, key: key))
        let publicKey = try P256.Signing.PublicKey(x963Representation: key.x963PublicKey)
        #expect(publicKey.isValidSignature(signature, for: SHA256.hash(data: Data("elsewhere".utf8))))
    }

    @Test func anAlteredPrivateBlobIsRefused() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let key = try session.createKey()
        let other = try session.createKey()
        let digest = Array(SHA256.hash(data: Data("altered".utf8)))
        // A bit flipped inside the encrypted sensitive area, and at its integrity HMAC: the TPM's check fails.
        for index in [key.privateBlob.count - 5, 6] {
            var privateBlob = key.privateBlob
            privateBlob[index] ^= 0x01
            let altered = try #require(TPMKeyBlob(publicBlob: key.publicBlob, privateBlob: privateBlob))
            Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try session.sign(digest: digest, key: altered) }
        }
        // Another key's private part with this key's public part: refused too (the integrity covers the public part).
        let mixed = try #require(TPMKeyBlob(publicBlob: key.publicBlob, privateBlob: other.privateBlob))
        Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try session.sign(digest: digest, key: mixed) }
        Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: other.x963PublicKey, key: mixed) }
        // The refusals changed nothing: the original still signs.
        #expect(try session.sign(digest: digest, key: key).count > 64)
    }

    @Test func aDamagedSerializedKeyIsRefused() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let key = try session.createKey()
        let bytes = key.serialized
        let header: [UInt8] = Array("SKTK".utf8) + [0, 1, 1]
        #expect(Array(bytes.prefix(7)) == header)
        #expect(try TPMKeyBlob(serialized: bytes) == key)

        // Every truncation, and anything after the end.
        for count in 0..<bytes.count {
            expectKeychainError(.corruptData, status: .decode, "truncated to \(count) bytes") { try TPMKeyBlob(serialized: bytes.prefix(count)) }
        }
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: bytes + [0]) }
        // Another magic, kind, or version.
        var garbled = bytes
        garbled[0] ^= 0x20
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: garbled) }
        garbled = bytes
        garbled[6] = 2
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: garbled) }
        garbled = bytes
        garbled[5] = 2
        expectKeychainError(.notAvailable, status: .wrongSecVersion) { try TPMKeyBlob(serialized: garbled) }
        // A length prefix past the end.
        garbled = bytes
        garbled[7] = 0x7f
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: garbled) }
        // A public part whose point is off the curve, or whose template is another (a sign-only key's attributes).
        let publicStart = 7 + 4
        garbled = bytes
        garbled[publicStart + key.publicBlob.count - 1] ^= 0x01
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: garbled) }
        garbled = bytes
        garbled[publicStart + 2 + 2 + 2 + 1] ^= 0x02  // the attributes' second byte: decrypt
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: garbled) }
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: Array("garbage".utf8)) }
    }

    @Test func thePublicBlobAloneGivesNothingUsable() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let key = try session.createKey()
        let digest = Array(SHA256.hash(data: Data("public only".utf8)))
        // No key without a private part; a serialized key without one does not read.
        #expect(TPMKeyBlob(publicBlob: key.publicBlob, privateBlob: []) == nil)
        var w = BinaryWriter()
        w.raw(TPMKeyBlob.magic)
        w.u16(TPMKeyBlob.version)
        w.u8(TPMKeyBlob.p256Kind)
        w.lengthPrefixed(key.publicBlob)
        w.lengthPrefixed([UInt8]())
        expectKeychainError(.corruptData, status: .decode) { try TPMKeyBlob(serialized: w.bytes) }
        // An empty TPM2B_PRIVATE, or one of the right size made up: the TPM refuses to load either.
        let madeUpSize = key.privateBlob.count - 2
        let madeUp = [UInt8(madeUpSize >> 8), UInt8(madeUpSize & 0xff)] + (0..<madeUpSize).map { UInt8(truncatingIfNeeded: $0) }
        for privateBlob in [[0, 0], madeUp] {
            let guessed = try #require(TPMKeyBlob(publicBlob: key.publicBlob, privateBlob: privateBlob))
            Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try session.sign(digest: digest, key: guessed) }
            Self.expectFailure(.refused) { () throws(TPMDevice.Failure) in try session.sharedSecret(peerX963: key.x963PublicKey, key: guessed) }
        }
        // The public blob is the public key and its template, nothing more: its point is the X9.63 key's.
        #expect(key.publicBlob.count == 88)
        let x = Array(key.x963PublicKey[1...32])
        let y = Array(key.x963PublicKey[33...])
        let point: [UInt8] = [0, 32] + x + [0, 32] + y
        #expect(Array(key.publicBlob.suffix(68)) == point)
        // A sealed object's blobs are not a key.
        let sealed = try machine.device.seal(Array("a sealed secret".utf8))
        #expect(TPMKeyBlob(publicBlob: sealed.publicBlob, privateBlob: sealed.privateBlob) == nil)
    }

    @Test func aSessionSharesTheTPMAndSerialisesItsCalls() throws {
        let machine = try SoftwareTPM()
        let session = try TPMSession(device: machine.device)
        let keys = [try session.createKey(), try session.createKey()]
        // While the session is open, sealing on the same simulator (its own connection and primary key) still fits.
        let sealed = try machine.device.seal(Array("beside a session".utf8))
        #expect(try machine.device.unseal(sealed) == Array("beside a session".utf8))

        // Many threads at once on one session: every call gets its own, valid, answer.
        let message = Data("concurrent".utf8)
        let results = Mutex<[Int: Result<[UInt8], TPMDevice.Failure>]>([:])
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let result = Result { () throws(TPMDevice.Failure) in try session.sign(message: message, key: keys[index % 2]) }
            results.withLock { $0[index] = result }
        }
        let collected = results.withLock { $0 }
        #expect(collected.count == 16)
        for (index, result) in collected {
            let der = try result.get()
            let publicKey = try P256.Signing.PublicKey(x963Representation: keys[index % 2].x963PublicKey)
            let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
            #expect(publicKey.isValidSignature(signature, for: message))
        }
    }

    @Test func aSessionToATPMThatDoesNotAnswer() {
        Self.expectFailure(.unreachable) { () throws(TPMDevice.Failure) in try TPMSession(device: TPMDevice(tcti: "swtpm:host=127.0.0.1,port=9")) }
    }
}
