import Foundation
import KeychainServices
import Testing

/// A scratch folder where the tests hand keys, data and signatures to the `openssl` command line (and Python's
/// `cryptography`), independent implementations of the same algorithms.
struct Workbench {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("seckey-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }

    func path(_ name: String) -> String { folder + "/" + name }

    func write(_ name: String, _ data: Data) throws { try data.write(to: URL(fileURLWithPath: path(name))) }

    func read(_ name: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path(name))) }

    /// Runs a program in the folder; returns its exit status and stdout + stderr.
    @discardableResult
    func run(_ program: String, _ arguments: [String], input: Data? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(input) }
        try stdin.fileHandleForWriting.close()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    func openssl(_ arguments: String...) throws -> (status: Int32, output: String) { try run("openssl", arguments) }
}

/// The SubjectPublicKeyInfo DER of an X9.63 EC public key, so openssl can read it (header bytes per RFC 5480).
func spki(ecPoint: Data) -> Data {
    let headers: [Int: String] = [
        65: "3059301306072a8648ce3d020106082a8648ce3d030107034200",
        97: "3076301006072a8648ce3d020106052b81040022036200",
    ]
    return hex(headers[ecPoint.count] ?? "") + ecPoint
}

func hex(_ s: String) -> Data {
    var out = Data()
    var index = s.startIndex
    while index < s.endIndex, let next = s.index(index, offsetBy: 2, limitedBy: s.endIndex), let byte = UInt8(s[index..<next], radix: 16) {
        out.append(byte)
        index = next
    }
    return out
}

func cfError(_ error: Unmanaged<CFError>?) -> Int? { error?.takeRetainedValue().code }

func randomKey(_ type: CFString, _ bits: Int, _ extra: [String: Any] = [:]) throws -> SecKey {
    var error: Unmanaged<CFError>?
    var parameters: [String: Any] = [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: bits]
    parameters.merge(extra) { $1 }
    guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else {
        throw KeyTestError("SecKeyCreateRandomKey failed: \(String(describing: cfError(error)))")
    }
    return key
}

func external(_ key: SecKey) throws -> Data {
    var error: Unmanaged<CFError>?
    guard let data = SecKeyCopyExternalRepresentation(key, &error) as Data? else { throw KeyTestError("no external representation") }
    return data
}

struct KeyTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite struct SecKeyTests {
    @Test(arguments: [
        (256, 65, 97, "sha256", SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256),
        (384, 97, 145, "sha384", SecKeyAlgorithm.ecdsaSignatureMessageX962SHA384),
    ])
    func ecdsaSignaturesInteroperateWithOpenSSL(bits: Int, publicLength: Int, privateLength: Int, digest: String, algorithm: SecKeyAlgorithm) throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, bits)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        #expect(try external(key).count == privateLength)
        let point = try external(publicKey)
        #expect(point.count == publicLength && point.first == 4)
        #expect(try external(key).prefix(publicLength) == point)
        #expect(SecKeyGetBlockSize(key) == bits / 8)

        // We sign, openssl verifies.
        let message = Data("message signed by swift-keychain".utf8)
        var error: Unmanaged<CFError>?
        let signature = try #require(SecKeyCreateSignature(key, algorithm, message as CFData, &error) as Data?)
        try bench.write("msg", message)
        try bench.write("sig", signature)
        try bench.write("pub.der", spki(ecPoint: point))
        #expect(try bench.openssl("pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-out", "pub.pem").status == 0)
        let verified = try bench.openssl("dgst", "-\(digest)", "-verify", "pub.pem", "-signature", "sig", "msg")
        #expect(verified.output.contains("Verified OK"), "\(verified.output)")
        #expect(SecKeyVerifySignature(publicKey, algorithm, message as CFData, signature as CFData, &error))

        // openssl signs with its own key; we import its public key and verify.
        let curve = bits == 256 ? "prime256v1" : "secp384r1"
        #expect(try bench.openssl("ecparam", "-name", curve, "-genkey", "-noout", "-out", "theirs.pem").status == 0)
        #expect(try bench.openssl("pkey", "-in", "theirs.pem", "-pubout", "-outform", "DER", "-out", "theirs.der").status == 0)
        #expect(try bench.openssl("dgst", "-\(digest)", "-sign", "theirs.pem", "-out", "theirs.sig", "msg").status == 0)
        let theirPoint = try bench.read("theirs.der").suffix(publicLength)
        let theirs = try #require(
            SecKeyCreateWithData(
                theirPoint as CFData,
                [
                    kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                    kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                ] as CFDictionary, &error))
        #expect(SecKeyVerifySignature(theirs, algorithm, message as CFData, try bench.read("theirs.sig") as CFData, &error))
        // A changed message does not verify: false, and errSecVerifyFailed.
        #expect(!SecKeyVerifySignature(theirs, algorithm, Data("other".utf8) as CFData, try bench.read("theirs.sig") as CFData, &error))
        #expect(cfError(error) == -67808)
    }

    @Test func ecdsaDigestAndRFC4754Forms() throws {
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        var error: Unmanaged<CFError>?
        let message = Data("abc".utf8)
        // SHA-256("abc"), computed independently.
        let digest = hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let raw = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageRFC4754SHA256, message as CFData, &error) as Data?)
        #expect(raw.count == 64)
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureDigestRFC4754SHA256, digest as CFData, raw as CFData, &error))
        let der = try #require(SecKeyCreateSignature(key, .ecdsaSignatureDigestX962SHA256, digest as CFData, &error) as Data?)
        #expect(der.first == 0x30)
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, der as CFData, &error))
        // A digest of the wrong length is errSecParam.
        #expect(SecKeyCreateSignature(key, .ecdsaSignatureDigestX962SHA256, Data(count: 20) as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test func rsaSignaturesAndOAEPInteroperateWithOpenSSL() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        // openssl makes the key; we import its PKCS#1 private key, as Apple's SecKeyCreateWithData takes it.
        #expect(try bench.openssl("genrsa", "-out", "rsa.pem", "2048").status == 0)
        #expect(try bench.openssl("rsa", "-in", "rsa.pem", "-outform", "DER", "-traditional", "-out", "rsa.der").status == 0)
        #expect(try bench.openssl("rsa", "-in", "rsa.pem", "-pubout", "-out", "pub.pem").status == 0)
        var error: Unmanaged<CFError>?
        let key = try #require(
            SecKeyCreateWithData(
                try bench.read("rsa.der") as CFData,
                [
                    kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                ] as CFDictionary, &error))
        #expect(SecKeyGetBlockSize(key) == 256)
        #expect(try external(key) == (try bench.read("rsa.der")))
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        // Our PKCS#1 public key is the one openssl derives.
        try bench.write("ours-pub.der", try external(publicKey))
        let converted = try bench.openssl("rsa", "-RSAPublicKey_in", "-inform", "DER", "-in", "ours-pub.der", "-pubout")
        #expect(converted.output.hasSuffix(try String(contentsOfFile: bench.path("pub.pem"), encoding: .utf8)), "\(converted.output)")

        let message = Data("rsa message".utf8)
        try bench.write("msg", message)
        for (algorithm, options) in [
            (SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA256, [String]()),
            (.rsaSignatureMessagePSSSHA256, ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"]),
        ] {
            let signature = try #require(SecKeyCreateSignature(key, algorithm, message as CFData, &error) as Data?)
            try bench.write("sig", signature)
            let verified = try bench.run("openssl", ["dgst", "-sha256"] + options + ["-verify", "pub.pem", "-signature", "sig", "msg"])
            #expect(verified.output.contains("Verified OK"), "\(algorithm.rawValue): \(verified.output)")
            #expect(try bench.run("openssl", ["dgst", "-sha256"] + options + ["-sign", "rsa.pem", "-out", "theirs.sig", "msg"]).status == 0)
            #expect(SecKeyVerifySignature(publicKey, algorithm, message as CFData, try bench.read("theirs.sig") as CFData, &error))
        }

        // OAEP-SHA256 both ways.
        let secret = Data("oaep plaintext".utf8)
        let sealed = try #require(SecKeyCreateEncryptedData(publicKey, .rsaEncryptionOAEPSHA256, secret as CFData, &error) as Data?)
        try bench.write("sealed", sealed)
        let oaep = ["-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256"]
        let opened = try bench.run("openssl", ["pkeyutl", "-decrypt", "-inkey", "rsa.pem", "-in", "sealed"] + oaep)
        #expect(opened.output == "oaep plaintext")
        try bench.write("plain", secret)
        #expect(try bench.run("openssl", ["pkeyutl", "-encrypt", "-pubin", "-inkey", "pub.pem", "-in", "plain", "-out", "theirs.sealed"] + oaep).status == 0)
        #expect(SecKeyCreateDecryptedData(key, .rsaEncryptionOAEPSHA256, try bench.read("theirs.sealed") as CFData, &error) as Data? == secret)
        // A damaged ciphertext is errSecParam, not a crash.
        var damaged = sealed
        damaged[10] ^= 1
        #expect(SecKeyCreateDecryptedData(key, .rsaEncryptionOAEPSHA256, damaged as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test func eciesMatchesAnIndependentImplementation() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        var error: Unmanaged<CFError>?
        let plaintext = Data("ecies plaintext".utf8)
        let algorithm = SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        let sealed = try #require(SecKeyCreateEncryptedData(publicKey, algorithm, plaintext as CFData, &error) as Data?)
        #expect(sealed.count == 65 + plaintext.count + 16)
        #expect(SecKeyCreateDecryptedData(key, algorithm, sealed as CFData, &error) as Data? == plaintext)
        // Python's cryptography opens it with Apple's recipe: ECDH with the ephemeral key, X9.63 KDF (SHA-256,
        // shared info = ephemeral point) to a 16-byte AES key and a 16-byte nonce, AES-GCM.
        try bench.write("priv", try external(key))
        try bench.write("sealed", sealed)
        let script = """
            import sys
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            priv = open('priv','rb').read(); sealed = open('sealed','rb').read()
            d = int.from_bytes(priv[65:], 'big')
            key = ec.derive_private_key(d, ec.SECP256R1())
            eph = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sealed[:65])
            shared = key.exchange(ec.ECDH(), eph)
            km = X963KDF(algorithm=hashes.SHA256(), length=32, sharedinfo=sealed[:65]).derive(shared)
            sys.stdout.write(AESGCM(km[:16]).decrypt(km[16:], sealed[65:], None).decode())
            """
        try bench.write("open.py", Data(script.utf8))
        let opened = try bench.run("python3", ["open.py"])
        #expect(opened.output == "ecies plaintext", "\(opened.output)")
        // Tampering is refused.
        var damaged = sealed
        damaged[damaged.count - 1] ^= 1
        #expect(SecKeyCreateDecryptedData(key, algorithm, damaged as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test func ecdhAgreesBothWaysAndWithOpenSSL() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let alice = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let bob = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let alicePublic = try #require(SecKeyCopyPublicKey(alice)), bobPublic = try #require(SecKeyCopyPublicKey(bob))
        var error: Unmanaged<CFError>?
        let ab = try #require(SecKeyCopyKeyExchangeResult(alice, .ecdhKeyExchangeStandard, bobPublic, [:] as CFDictionary, &error) as Data?)
        let ba = try #require(SecKeyCopyKeyExchangeResult(bob, .ecdhKeyExchangeStandard, alicePublic, [:] as CFDictionary, &error) as Data?)
        #expect(ab == ba && ab.count == 32)
        let parameters =
            [
                kSecKeyKeyExchangeParameterRequestedSize as String: 48,
                kSecKeyKeyExchangeParameterSharedInfo as String: Data("info".utf8),
            ] as CFDictionary
        let derived = try #require(SecKeyCopyKeyExchangeResult(alice, .ecdhKeyExchangeCofactorX963SHA256, bobPublic, parameters, &error) as Data?)
        #expect(derived.count == 48)
        #expect(SecKeyCopyKeyExchangeResult(bob, .ecdhKeyExchangeCofactorX963SHA256, alicePublic, parameters, &error) as Data? == derived)
        // openssl derives the same raw secret from Bob's public key and a key it was given as PEM.
        try bench.write("bob.der", spki(ecPoint: try external(bobPublic)))
        try bench.write("alice.der", hex("30770201010420") + (try external(alice)).suffix(32) + hex("a00a06082a8648ce3d030107a144034200") + (try external(alicePublic)))
        #expect(try bench.openssl("pkey", "-pubin", "-inform", "DER", "-in", "bob.der", "-out", "bob.pem").status == 0)
        #expect(try bench.openssl("ec", "-inform", "DER", "-in", "alice.der", "-out", "alice.pem").status == 0)
        #expect(try bench.openssl("pkeyutl", "-derive", "-inkey", "alice.pem", "-peerkey", "bob.pem", "-out", "secret").status == 0)
        #expect(try bench.read("secret") == ab)
    }

    @Test func badParametersGetApplesCodes() throws {
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateRandomKey([kSecAttrKeyType as String: "99", kSecAttrKeySizeInBits as String: 256] as CFDictionary, &error) == nil)
        #expect(cfError(error) == -50)
        #expect(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 255] as CFDictionary, &error) == nil)
        #expect(cfError(error) == -50)
        #expect(SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 1024] as CFDictionary, &error) == nil)
        #expect(cfError(error) == -50)
        let attributes = [kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass as String: kSecAttrKeyClassPublic] as CFDictionary
        for garbage in [Data(), Data([4]), Data(count: 65), Data([4] + [UInt8](repeating: 1, count: 64))] {
            #expect(SecKeyCreateWithData(garbage as CFData, attributes, &error) == nil)
            #expect(cfError(error) == -50)
        }
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        // A public key does not sign; an EC key does not do RSA; unknown algorithms are not supported.
        #expect(SecKeyCreateSignature(publicKey, .ecdsaSignatureMessageX962SHA256, Data() as CFData, &error) == nil)
        #expect(cfError(error) == -50)
        #expect(SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data() as CFData, &error) == nil)
        #expect(SecKeyCreateSignature(key, SecKeyAlgorithm("algid:sign:nothing" as CFString), Data() as CFData, &error) == nil)
        #expect(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA256))
        #expect(!SecKeyIsAlgorithmSupported(key, .verify, .ecdsaSignatureMessageX962SHA256))
        #expect(SecKeyIsAlgorithmSupported(publicKey, .verify, .ecdsaSignatureMessageX962SHA256))
        #expect(SecKeyIsAlgorithmSupported(publicKey, .encrypt, .eciesEncryptionStandardVariableIVX963SHA256AESGCM))
        #expect(SecKeyIsAlgorithmSupported(key, .keyExchange, .ecdhKeyExchangeStandard))
        #expect(!SecKeyIsAlgorithmSupported(key, .sign, .rsaSignatureMessagePSSSHA256))
        #expect(SecKeyIsAlgorithmSupported(key, .sign, .ecdsaSignatureMessageX962SHA224), "SHA-224 comes from the system's libcrypto")
        // A key exchange with a KDF needs its size.
        #expect(SecKeyCopyKeyExchangeResult(key, .ecdhKeyExchangeStandardX963SHA256, publicKey, [:] as CFDictionary, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test(arguments: Backend.allCases)
    func permanentKeysAreStoredAndFoundAsRefs(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let tag = Data("com.example.keys.signing".utf8)
            let key = try randomKey(
                kSecAttrKeyTypeECSECPrimeRandom, 256,
                [
                    kSecPrivateKeyAttrs as String: [kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag],
                    kSecAttrLabel as String: "signing key",
                ])
            let privateBytes = try external(key)
            let attributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
            // Apple's string constants here; a stored item's attributes have them as numbers.
            #expect(attributes[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String)
            #expect(attributes[kSecAttrKeyType as String] as? String == kSecAttrKeyTypeECSECPrimeRandom as String)
            #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(attributes[kSecAttrApplicationTag as String] as? Data == tag)
            let label = try #require(attributes[kSecAttrApplicationLabel as String] as? Data)
            #expect(label.count == 20)

            let (status, found) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef as String: true,
            ])
            #expect(status == errSecSuccess)
            let stored = try #require(found as? SecKey)
            #expect(try external(stored) == privateBytes)
            // The stored key signs; the public key made at generation verifies.
            var error: Unmanaged<CFError>?
            let signature = try #require(SecKeyCreateSignature(stored, .ecdsaSignatureMessageX962SHA256, Data("x".utf8) as CFData, &error) as Data?)
            #expect(SecKeyVerifySignature(try #require(SecKeyCopyPublicKey(key)), .ecdsaSignatureMessageX962SHA256, Data("x".utf8) as CFData, signature as CFData, &error))
            // Attributes and a ref together; the application label is what a query by it finds.
            let (both, result) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationLabel as String: label,
                kSecReturnRef as String: true, kSecReturnAttributes as String: true,
            ])
            #expect(both == errSecSuccess)
            let dict = try #require(result as? [String: Any])
            #expect(dict[kSecAttrLabel as String] as? String == "signing key")
            #expect(dict[kSecValueRef as String] is SecKey)
            // Ephemeral keys are not stored.
            _ = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256, [kSecAttrApplicationTag as String: Data("eph".utf8)])
            #expect(copy([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("eph".utf8)]).0 == errSecItemNotFound)
        }
        // The private key is nowhere in the keychain's files in the clear.
        let scalar = try kc.run { () throws -> Data in
            let (status, found) = copy([kSecClass as String: kSecClassKey, kSecReturnRef as String: true])
            #expect(status == errSecSuccess)
            return try external(try #require(found as? SecKey, "status \(status), \(String(describing: found))")).suffix(32)
        }
        for name in (try FileManager.default.contentsOfDirectory(atPath: kc.home)) {
            guard let bytes = FileManager.default.contents(atPath: kc.home + "/" + name) else { continue }
            #expect(bytes.range(of: scalar) == nil, "\(name) holds the private key")
        }
    }
}
