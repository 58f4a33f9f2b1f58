import Foundation
import KeychainServices
import Testing

/// An RSA key of ours, written where openssl and Python read it: `priv.pem`, `pub.pem` (SubjectPublicKeyInfo) and
/// `pub1.der` (PKCS#1, what the AES-GCM variants authenticate).
struct RSABench {
    let bench: Workbench
    let key: SecKey
    let publicKey: SecKey

    init(bits: Int = 2048) throws {
        bench = try Workbench()
        key = try randomKey(kSecAttrKeyTypeRSA, bits)
        publicKey = try #require(SecKeyCopyPublicKey(key))
        try bench.write("priv.der", try external(key))
        try bench.write("pub1.der", try external(publicKey))
        #expect(try bench.openssl("rsa", "-inform", "DER", "-in", "priv.der", "-out", "priv.pem").status == 0)
        #expect(try bench.openssl("rsa", "-RSAPublicKey_in", "-inform", "DER", "-in", "pub1.der", "-pubout", "-out", "pub.pem").status == 0)
    }

    func sign(_ algorithm: String, _ data: Data) throws -> Data {
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, SecKeyAlgorithm(algorithm as CFString), data as CFData, &error) as Data? else {
            throw KeyTestError("\(algorithm) did not sign: \(String(describing: cfError(error)))")
        }
        return signature
    }

    func verify(_ algorithm: String, _ data: Data, _ signature: Data) -> Bool {
        var error: Unmanaged<CFError>?
        return SecKeyVerifySignature(publicKey, SecKeyAlgorithm(algorithm as CFString), data as CFData, signature as CFData, &error)
    }

    func encrypt(_ algorithm: String, _ data: Data) throws -> Data {
        var error: Unmanaged<CFError>?
        guard let sealed = SecKeyCreateEncryptedData(publicKey, SecKeyAlgorithm(algorithm as CFString), data as CFData, &error) as Data? else {
            throw KeyTestError("\(algorithm) did not encrypt: \(String(describing: cfError(error)))")
        }
        return sealed
    }

    func decrypt(_ algorithm: String, _ data: Data) -> Data? {
        var error: Unmanaged<CFError>?
        return SecKeyCreateDecryptedData(key, SecKeyAlgorithm(algorithm as CFString), data as CFData, &error) as Data?
    }
}

/// The hashes of Apple's algorithm names, with openssl's name and the PSS salt label Apple's identifiers carry.
let appleHashes: [(name: String, openssl: String, length: Int, pssLabel: Int)] = [
    ("SHA1", "sha1", 20, 20), ("SHA224", "sha224", 28, 24), ("SHA256", "sha256", 32, 32), ("SHA384", "sha384", 48, 48), ("SHA512", "sha512", 64, 64),
]

@Suite struct SecKeyAlgorithmTests {
    @Test func rsaSignaturesOverMessagesInteroperateWithOpenSSL() throws {
        let rsa = try RSABench()
        defer { rsa.bench.remove() }
        let message = Data("a message signed with every hash".utf8)
        try rsa.bench.write("msg", message)
        for hash in appleHashes {
            for pss in [false, true] {
                let algorithm = pss ? "algid:sign:RSA:message-PSS:\(hash.name):\(hash.name):\(hash.pssLabel)" : "algid:sign:RSA:message-PKCS1v15:\(hash.name)"
                let options = pss ? ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:\(hash.length)"] : []
                // Ours verifies in openssl (PSS: salt as long as the digest, MGF1 with the same hash).
                try rsa.bench.write("ours.sig", try rsa.sign(algorithm, message))
                let checked = try rsa.bench.run("openssl", ["dgst", "-\(hash.openssl)"] + options + ["-verify", "pub.pem", "-signature", "ours.sig", "msg"])
                #expect(checked.output.contains("Verified OK"), "\(algorithm): \(checked.output)")
                // openssl's verifies here; a changed message does not.
                let made = try rsa.bench.run("openssl", ["dgst", "-\(hash.openssl)"] + options + ["-sign", "priv.pem", "-out", "theirs.sig", "msg"])
                #expect(made.status == 0, "\(made.output)")
                let theirs = try rsa.bench.read("theirs.sig")
                #expect(rsa.verify(algorithm, message, theirs), "\(algorithm)")
                #expect(!rsa.verify(algorithm, Data("another".utf8), theirs), "\(algorithm)")
            }
        }
    }

    @Test func rsaSignaturesOverDigestsInteroperateWithOpenSSL() throws {
        let rsa = try RSABench()
        defer { rsa.bench.remove() }
        let message = Data("a digest computed by openssl".utf8)
        try rsa.bench.write("msg", message)
        for hash in appleHashes {
            #expect(try rsa.bench.openssl("dgst", "-\(hash.openssl)", "-binary", "-out", "digest", "msg").status == 0)
            let digest = try rsa.bench.read("digest")
            for pss in [false, true] {
                let algorithm = pss ? "algid:sign:RSA:digest-PSS:\(hash.name):\(hash.name):\(hash.pssLabel)" : "algid:sign:RSA:digest-PKCS1v15:\(hash.name)"
                var options = ["-pkeyopt", "digest:\(hash.openssl)"]
                if pss { options += ["-pkeyopt", "rsa_padding_mode:pss", "-pkeyopt", "rsa_pss_saltlen:digest"] }
                let ours = try rsa.sign(algorithm, digest)
                try rsa.bench.write("ours.sig", ours)
                let checked = try rsa.bench.run("openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-in", "digest", "-sigfile", "ours.sig"] + options)
                #expect(checked.output.contains("Signature Verified Successfully"), "\(algorithm): \(checked.output)")
                let made = try rsa.bench.run("openssl", ["pkeyutl", "-sign", "-inkey", "priv.pem", "-in", "digest", "-out", "theirs.sig"] + options)
                #expect(made.status == 0, "\(made.output)")
                #expect(rsa.verify(algorithm, digest, try rsa.bench.read("theirs.sig")), "\(algorithm)")
                if !pss {
                    // PKCS#1 v1.5 is deterministic: the digest form signs exactly as the message form.
                    #expect(ours == (try rsa.sign("algid:sign:RSA:message-PKCS1v15:\(hash.name)", message)), "\(algorithm)")
                }
                // A digest of the wrong length is errSecParam.
                var error: Unmanaged<CFError>?
                #expect(SecKeyCreateSignature(rsa.key, SecKeyAlgorithm(algorithm as CFString), digest.dropLast() as CFData, &error) == nil)
                #expect(cfError(error) == -50, "\(algorithm)")
            }
        }
    }

    @Test func rawAndUnhashedRSASignaturesInteroperateWithOpenSSL() throws {
        let rsa = try RSABench()
        defer { rsa.bench.remove() }
        // PKCS#1 v1.5 padding around the bytes as given (no DigestInfo): openssl's pkeyutl without a digest.
        let data = Data("thirty-six bytes signed as they are".utf8)
        try rsa.bench.write("data", data)
        try rsa.bench.write("ours.sig", try rsa.sign("algid:sign:RSA:digest-PKCS1v15", data))
        let checked = try rsa.bench.openssl("pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-in", "data", "-sigfile", "ours.sig")
        #expect(checked.output.contains("Signature Verified Successfully"), "\(checked.output)")
        #expect(try rsa.bench.openssl("pkeyutl", "-sign", "-inkey", "priv.pem", "-in", "data", "-out", "theirs.sig").status == 0)
        #expect(rsa.verify("algid:sign:RSA:digest-PKCS1v15", data, try rsa.bench.read("theirs.sig")))

        // Raw RSA: a 255-byte number, left-padded to the modulus length, to the private exponent.
        let number = Data([0x01]) + Data((0..<254).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try rsa.bench.write("padded", Data([0]) + number)
        let ours = try rsa.sign("algid:sign:RSA:raw", number)
        #expect(ours.count == 256)
        try rsa.bench.write("raw.sig", ours)
        #expect(
            try rsa.bench.openssl(
                "pkeyutl", "-verifyrecover", "-pubin", "-inkey", "pub.pem", "-in", "raw.sig",
                "-pkeyopt", "rsa_padding_mode:none", "-out", "recovered"
            ).status == 0)
        #expect(try rsa.bench.read("recovered") == Data([0]) + number)
        // openssl's unpadded private-key operation (pkeyutl -sign takes only hash-sized input; -decrypt is the same math).
        #expect(
            try rsa.bench.openssl(
                "pkeyutl", "-decrypt", "-inkey", "priv.pem", "-in", "padded", "-pkeyopt", "rsa_padding_mode:none",
                "-out", "theirs-raw.sig"
            ).status == 0)
        #expect(try rsa.bench.read("theirs-raw.sig") == ours)
        #expect(rsa.verify("algid:sign:RSA:raw", number, ours))
        #expect(!rsa.verify("algid:sign:RSA:raw", number.dropLast(), ours))
        // More bytes than the modulus: errSecParam.
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateSignature(rsa.key, .rsaSignatureRaw, Data(count: 257) as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test func rsaEncryptionInteroperatesWithOpenSSL() throws {
        let rsa = try RSABench()
        defer { rsa.bench.remove() }
        let plaintext = Data("a secret for RSA".utf8)
        try rsa.bench.write("plain", plaintext)
        var cases: [(String, [String])] = [("algid:encrypt:RSA:PKCS1", ["-pkeyopt", "rsa_padding_mode:pkcs1"])]
        for hash in appleHashes {
            cases.append(
                (
                    "algid:encrypt:RSA:OAEP:\(hash.name)",
                    [
                        "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:\(hash.openssl)",
                        "-pkeyopt", "rsa_mgf1_md:\(hash.openssl)",
                    ]
                ))
        }
        for (algorithm, options) in cases {
            try rsa.bench.write("ours.ct", try rsa.encrypt(algorithm, plaintext))
            let opened = try rsa.bench.run("openssl", ["pkeyutl", "-decrypt", "-inkey", "priv.pem", "-in", "ours.ct", "-out", "opened"] + options)
            #expect(opened.status == 0, "\(algorithm): \(opened.output)")
            #expect(try rsa.bench.read("opened") == plaintext, "\(algorithm)")
            let sealed = try rsa.bench.run("openssl", ["pkeyutl", "-encrypt", "-pubin", "-inkey", "pub.pem", "-in", "plain", "-out", "theirs.ct"] + options)
            #expect(sealed.status == 0, "\(sealed.output)")
            #expect(rsa.decrypt(algorithm, try rsa.bench.read("theirs.ct")) == plaintext, "\(algorithm)")
        }
        // Raw RSA: the number left-padded to the modulus length; decryption gives the whole block back.
        let number = Data([0x02]) + Data(repeating: 0x5a, count: 200)
        let block = Data(count: 256 - number.count) + number
        try rsa.bench.write("block", block)
        try rsa.bench.write("raw.ct", try rsa.encrypt("algid:encrypt:RSA:raw", number))
        #expect(try rsa.bench.openssl("pkeyutl", "-decrypt", "-inkey", "priv.pem", "-in", "raw.ct", "-pkeyopt", "rsa_padding_mode:none", "-out", "raw.out").status == 0)
        #expect(try rsa.bench.read("raw.out") == block)
        #expect(try rsa.bench.openssl("pkeyutl", "-encrypt", "-pubin", "-inkey", "pub.pem", "-in", "block", "-pkeyopt", "rsa_padding_mode:none", "-out", "theirs-raw.ct").status == 0)
        #expect(try rsa.bench.read("theirs-raw.ct") == (try rsa.bench.read("raw.ct")), "raw RSA is deterministic")
        #expect(rsa.decrypt("algid:encrypt:RSA:raw", try rsa.bench.read("theirs-raw.ct")) == block)
        // A ciphertext changed on the way does not decrypt (OAEP): errSecParam.
        var changed = try rsa.encrypt("algid:encrypt:RSA:OAEP:SHA384", plaintext)
        changed[7] ^= 1
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateDecryptedData(rsa.key, .rsaEncryptionOAEPSHA384, changed as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }

    @Test(.enabled(if: pythonCryptography, "needs python3 with the cryptography package"), arguments: [2048, 4096])
    func rsaOAEPWithAESGCMInteroperatesWithPython(bits: Int) throws {
        let rsa = try RSABench(bits: bits)
        defer { rsa.bench.remove() }
        let message = Data("Apple's RSA hybrid: a wrapped AES key, then AES-GCM".utf8)
        try rsa.bench.write("msg", message)
        try rsa.bench.write("check.py", Data(rsaAESGCMScript.utf8))
        for hash in appleHashes {
            let algorithm = "algid:encrypt:RSA:OAEP:\(hash.name):AESGCM"
            let ours = try rsa.encrypt(algorithm, message)
            #expect(ours.count == bits / 8 + message.count + 16)
            try rsa.bench.write("ours.ct", ours)
            let checked = try rsa.bench.run("python3", ["check.py", hash.name])
            #expect(checked.output == "ok\n", "\(algorithm): \(checked.output)")
            #expect(rsa.decrypt(algorithm, try rsa.bench.read("theirs.ct")) == message, "\(algorithm)")
            var changed = ours
            changed[changed.count - 1] ^= 1
            #expect(rsa.decrypt(algorithm, changed) == nil, "\(algorithm): a changed tag")
        }
    }

    @Test func ecdsaWithSHA224InteroperatesWithOpenSSL() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        try bench.write("pub.der", spki(ecPoint: try external(publicKey)))
        #expect(try bench.openssl("pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-out", "pub.pem").status == 0)
        let message = Data("signed with SHA-224".utf8)
        try bench.write("msg", message)
        var error: Unmanaged<CFError>?
        let signature = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA224, message as CFData, &error) as Data?)
        try bench.write("ours.sig", signature)
        #expect(try bench.openssl("dgst", "-sha224", "-verify", "pub.pem", "-signature", "ours.sig", "msg").output.contains("Verified OK"))
        // openssl's SHA-224 digest is what the digest form signs.
        #expect(try bench.openssl("dgst", "-sha224", "-binary", "-out", "digest", "msg").status == 0)
        let raw = try #require(SecKeyCreateSignature(key, .ecdsaSignatureMessageRFC4754SHA224, message as CFData, &error) as Data?)
        #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureDigestRFC4754SHA224, try bench.read("digest") as CFData, raw as CFData, &error))
        // openssl signs; we verify.
        #expect(try bench.openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "theirs.pem").status == 0)
        #expect(try bench.openssl("pkey", "-in", "theirs.pem", "-pubout", "-outform", "DER", "-out", "theirs.der").status == 0)
        #expect(try bench.openssl("dgst", "-sha224", "-sign", "theirs.pem", "-out", "theirs.sig", "msg").status == 0)
        let theirs = try #require(
            SecKeyCreateWithData(
                try bench.read("theirs.der").suffix(65) as CFData,
                [
                    kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                    kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                ] as CFDictionary, &error))
        #expect(SecKeyVerifySignature(theirs, .ecdsaSignatureMessageX962SHA224, message as CFData, try bench.read("theirs.sig") as CFData, &error))
        #expect(!SecKeyVerifySignature(theirs, .ecdsaSignatureMessageX962SHA256, message as CFData, try bench.read("theirs.sig") as CFData, &error))
    }

    @Test(.enabled(if: pythonCryptography, "needs python3 with the cryptography package"))
    func ecdhAndECIESWithEveryHashInteroperateWithPython() throws {
        let bench = try Workbench()
        defer { bench.remove() }
        let key = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        try bench.write("ours.key", try external(key))
        try bench.write("check.py", Data(ecScript.utf8))
        let message = Data("ECIES with the X9.63 KDF".utf8)
        try bench.write("msg", message)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        var error: Unmanaged<CFError>?
        for hash in appleHashes {
            // ECDH with the X9.63 KDF: the same bytes as Python's X963KDF over its side of the exchange.
            let info = Data("shared info".utf8)
            for cofactor in [false, true] {
                let made = try bench.run("python3", ["check.py", "ecdh", hash.name])
                #expect(made.status == 0, "\(made.output)")
                let peer = try #require(
                    SecKeyCreateWithData(
                        try bench.read("peer.pub") as CFData,
                        [
                            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                            kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                        ] as CFDictionary, &error))
                let algorithm = SecKeyAlgorithm("algid:keyexchange:\(cofactor ? "ECDHC" : "ECDH"):KDFX963:\(hash.name)" as CFString)
                let derived =
                    SecKeyCopyKeyExchangeResult(
                        key, algorithm, peer,
                        [
                            kSecKeyKeyExchangeParameterRequestedSize as String: 42,
                            kSecKeyKeyExchangeParameterSharedInfo as String: info,
                        ] as CFDictionary, &error) as Data?
                #expect(derived == (try bench.read("peer.kdf")), "\(algorithm.rawValue)")
            }
            // ECIES, fixed and KDF-derived nonce: Python opens ours, we open Python's.
            for (cofactor, variable) in [(false, false), (true, false), (false, true), (true, true)] where !(variable && hash.name == "SHA1") {
                let name = "algid:encrypt:ECIES:\(cofactor ? "ECDHC" : "ECDH"):KDFX963:\(hash.name):AESGCM\(variable ? "-KDFIV" : "")"
                let algorithm = SecKeyAlgorithm(name as CFString)
                let sealed = try #require(SecKeyCreateEncryptedData(publicKey, algorithm, message as CFData, &error) as Data?)
                try bench.write("ours.ct", sealed)
                let checked = try bench.run("python3", ["check.py", "ecies", hash.name, variable ? "1" : "0"])
                #expect(checked.output == "ok\n", "\(name): \(checked.output)")
                #expect(SecKeyCreateDecryptedData(key, algorithm, try bench.read("theirs.ct") as CFData, &error) as Data? == message, "\(name)")
            }
        }
    }

    @Test func everyPublicAppleAlgorithmIsSupported() throws {
        let rsa = try randomKey(kSecAttrKeyTypeRSA, 2048)
        let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
        let ec = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let ecPublic = try #require(SecKeyCopyPublicKey(ec))
        let rsaSignatures: [SecKeyAlgorithm] = [
            .rsaSignatureRaw, .rsaSignatureDigestPKCS1v15Raw,
            .rsaSignatureDigestPKCS1v15SHA1, .rsaSignatureDigestPKCS1v15SHA224, .rsaSignatureDigestPKCS1v15SHA256,
            .rsaSignatureDigestPKCS1v15SHA384, .rsaSignatureDigestPKCS1v15SHA512,
            .rsaSignatureMessagePKCS1v15SHA1, .rsaSignatureMessagePKCS1v15SHA224, .rsaSignatureMessagePKCS1v15SHA256,
            .rsaSignatureMessagePKCS1v15SHA384, .rsaSignatureMessagePKCS1v15SHA512,
            .rsaSignatureDigestPSSSHA1, .rsaSignatureDigestPSSSHA224, .rsaSignatureDigestPSSSHA256, .rsaSignatureDigestPSSSHA384,
            .rsaSignatureDigestPSSSHA512,
            .rsaSignatureMessagePSSSHA1, .rsaSignatureMessagePSSSHA224, .rsaSignatureMessagePSSSHA256, .rsaSignatureMessagePSSSHA384,
            .rsaSignatureMessagePSSSHA512,
        ]
        let rsaEncryptions: [SecKeyAlgorithm] = [
            .rsaEncryptionRaw, .rsaEncryptionPKCS1, .rsaEncryptionOAEPSHA1, .rsaEncryptionOAEPSHA224, .rsaEncryptionOAEPSHA256,
            .rsaEncryptionOAEPSHA384, .rsaEncryptionOAEPSHA512, .rsaEncryptionOAEPSHA1AESGCM, .rsaEncryptionOAEPSHA224AESGCM,
            .rsaEncryptionOAEPSHA256AESGCM, .rsaEncryptionOAEPSHA384AESGCM, .rsaEncryptionOAEPSHA512AESGCM,
        ]
        let ecSignatures: [SecKeyAlgorithm] = [
            .ecdsaSignatureRFC4754, .ecdsaSignatureDigestX962, .ecdsaSignatureDigestX962SHA1, .ecdsaSignatureDigestX962SHA224,
            .ecdsaSignatureDigestX962SHA256, .ecdsaSignatureDigestX962SHA384, .ecdsaSignatureDigestX962SHA512,
            .ecdsaSignatureMessageX962SHA1, .ecdsaSignatureMessageX962SHA224, .ecdsaSignatureMessageX962SHA256,
            .ecdsaSignatureMessageX962SHA384, .ecdsaSignatureMessageX962SHA512,
            .ecdsaSignatureDigestRFC4754, .ecdsaSignatureDigestRFC4754SHA1, .ecdsaSignatureDigestRFC4754SHA224,
            .ecdsaSignatureDigestRFC4754SHA256, .ecdsaSignatureDigestRFC4754SHA384, .ecdsaSignatureDigestRFC4754SHA512,
            .ecdsaSignatureMessageRFC4754SHA1, .ecdsaSignatureMessageRFC4754SHA224, .ecdsaSignatureMessageRFC4754SHA256,
            .ecdsaSignatureMessageRFC4754SHA384, .ecdsaSignatureMessageRFC4754SHA512,
        ]
        let ecEncryptions: [SecKeyAlgorithm] = [
            .eciesEncryptionStandardX963SHA1AESGCM, .eciesEncryptionStandardX963SHA224AESGCM, .eciesEncryptionStandardX963SHA256AESGCM,
            .eciesEncryptionStandardX963SHA384AESGCM, .eciesEncryptionStandardX963SHA512AESGCM,
            .eciesEncryptionStandardVariableIVX963SHA224AESGCM, .eciesEncryptionStandardVariableIVX963SHA256AESGCM,
            .eciesEncryptionStandardVariableIVX963SHA384AESGCM, .eciesEncryptionStandardVariableIVX963SHA512AESGCM,
            .eciesEncryptionCofactorX963SHA1AESGCM, .eciesEncryptionCofactorX963SHA224AESGCM, .eciesEncryptionCofactorX963SHA256AESGCM,
            .eciesEncryptionCofactorX963SHA384AESGCM, .eciesEncryptionCofactorX963SHA512AESGCM,
            .eciesEncryptionCofactorVariableIVX963SHA224AESGCM, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM,
            .eciesEncryptionCofactorVariableIVX963SHA384AESGCM, .eciesEncryptionCofactorVariableIVX963SHA512AESGCM,
        ]
        let exchanges: [SecKeyAlgorithm] = [
            .ecdhKeyExchangeStandard, .ecdhKeyExchangeStandardX963SHA1, .ecdhKeyExchangeStandardX963SHA224,
            .ecdhKeyExchangeStandardX963SHA256, .ecdhKeyExchangeStandardX963SHA384, .ecdhKeyExchangeStandardX963SHA512,
            .ecdhKeyExchangeCofactor, .ecdhKeyExchangeCofactorX963SHA1, .ecdhKeyExchangeCofactorX963SHA224,
            .ecdhKeyExchangeCofactorX963SHA256, .ecdhKeyExchangeCofactorX963SHA384, .ecdhKeyExchangeCofactorX963SHA512,
        ]
        for algorithm in rsaSignatures {
            #expect(SecKeyIsAlgorithmSupported(rsa, .sign, algorithm) && SecKeyIsAlgorithmSupported(rsaPublic, .verify, algorithm), "\(algorithm.rawValue)")
            #expect(!SecKeyIsAlgorithmSupported(ec, .sign, algorithm), "\(algorithm.rawValue)")
        }
        for algorithm in rsaEncryptions {
            #expect(SecKeyIsAlgorithmSupported(rsaPublic, .encrypt, algorithm) && SecKeyIsAlgorithmSupported(rsa, .decrypt, algorithm), "\(algorithm.rawValue)")
        }
        for algorithm in ecSignatures {
            #expect(SecKeyIsAlgorithmSupported(ec, .sign, algorithm) && SecKeyIsAlgorithmSupported(ecPublic, .verify, algorithm), "\(algorithm.rawValue)")
        }
        for algorithm in ecEncryptions {
            #expect(SecKeyIsAlgorithmSupported(ecPublic, .encrypt, algorithm) && SecKeyIsAlgorithmSupported(ec, .decrypt, algorithm), "\(algorithm.rawValue)")
        }
        for algorithm in exchanges {
            #expect(SecKeyIsAlgorithmSupported(ec, .keyExchange, algorithm), "\(algorithm.rawValue)")
        }
        #expect(rsaSignatures.count + rsaEncryptions.count + ecSignatures.count + ecEncryptions.count + exchanges.count == 87)
    }

    /// Apple's identifiers this keychain does not carry out: each is errSecUnimplemented (-4), with a message, and
    /// SecKeyIsAlgorithmSupported says false; a string that is no algorithm at all stays errSecParam (-50).
    @Test func unimplementedAlgorithmsAreErrSecUnimplemented() throws {
        let rsa = try randomKey(kSecAttrKeyTypeRSA, 2048)
        let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
        let ec = try randomKey(kSecAttrKeyTypeECSECPrimeRandom, 256)
        let ecPublic = try #require(SecKeyCopyPublicKey(ec))
        let unimplemented = [
            "algid:sign:RSA:digest-PKCS1v15:MD5", "algid:sign:RSA:message-PKCS1v15:MD5", "algid:sign:RSA:raw-cc",
            "algid:encrypt:RSA:raw-cc", "algid:encrypt:ECIES:ECDH:SHA256:2PubKeys",
        ]
        let operations: [SecKeyOperationType] = [.sign, .verify, .encrypt, .decrypt, .keyExchange]
        for name in unimplemented {
            let algorithm = SecKeyAlgorithm(name as CFString)
            for key in [rsa, rsaPublic, ec, ecPublic] {
                for operation in operations { #expect(!SecKeyIsAlgorithmSupported(key, operation, algorithm), "\(name)") }
            }
            var error: Unmanaged<CFError>?
            let target = name.contains("ECIES") ? ecPublic : rsaPublic
            if name.contains(":sign:") {
                #expect(SecKeyCreateSignature(rsa, algorithm, Data(count: 16) as CFData, &error) == nil)
            } else {
                #expect(SecKeyCreateEncryptedData(target, algorithm, Data(count: 16) as CFData, &error) == nil)
            }
            let failure = try #require(error?.takeRetainedValue())
            #expect(failure.code == -4, "\(name)")
            let message = failure.userInfo[NSDebugDescriptionErrorKey] as? String ?? ""
            #expect(message.hasPrefix("Algorithm \(name) is not implemented: "), "\(message)")
        }
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateSignature(rsa, SecKeyAlgorithm("algid:sign:RSA:nothing" as CFString), Data() as CFData, &error) == nil)
        #expect(cfError(error) == -50)
    }
}

/// Whether python3 can import `cryptography`.
let pythonCryptography: Bool = {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", "import cryptography"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()

/// Opens our RSA-OAEP-AES-GCM ciphertext (`ours.ct`) with Python's `cryptography` and seals `msg` the same way
/// (`theirs.ct`): the OAEP-wrapped AES key, then AES-GCM with 16 zero bytes of nonce and the PKCS#1 public key as
/// associated data.
let rsaAESGCMScript = """
    import os, sys
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    h = getattr(hashes, sys.argv[1])()
    key = serialization.load_pem_private_key(open('priv.pem', 'rb').read(), None)
    public = open('pub1.der', 'rb').read()
    message = open('msg', 'rb').read()
    oaep = padding.OAEP(mgf=padding.MGF1(h), algorithm=h, label=None)
    size = key.key_size // 8
    session_length = 32 if key.key_size >= 4096 else 16
    ours = open('ours.ct', 'rb').read()
    session = key.decrypt(ours[:size], oaep)
    assert len(session) == session_length, len(session)
    assert AESGCM(session).decrypt(bytes(16), ours[size:], public) == message
    session = os.urandom(session_length)
    open('theirs.ct', 'wb').write(key.public_key().encrypt(session, oaep) + AESGCM(session).encrypt(bytes(16), message, public))
    print('ok')
    """

/// ECDH with the X9.63 KDF (`ecdh HASH`: a new peer key, `peer.pub` and `peer.kdf`, 42 bytes over "shared info") and
/// Apple's ECIES (`ecies HASH VARIABLEIV`: opens `ours.ct` for our key, seals `msg` to it as `theirs.ct`).
let ecScript = """
    import os, sys
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
    h = getattr(hashes, sys.argv[2])
    ours = open('ours.key', 'rb').read()
    private = ec.derive_private_key(int.from_bytes(ours[65:], 'big'), ec.SECP256R1())
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ours[:65])
    point = lambda k: k.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    if sys.argv[1] == 'ecdh':
        peer = ec.generate_private_key(ec.SECP256R1())
        secret = peer.exchange(ec.ECDH(), public)
        open('peer.pub', 'wb').write(point(peer))
        open('peer.kdf', 'wb').write(X963KDF(algorithm=h(), length=42, sharedinfo=b'shared info').derive(secret))
        sys.exit(0)
    variable = sys.argv[3] == '1'
    def schedule(secret, ephemeral):
        material = X963KDF(algorithm=h(), length=16 + (16 if variable else 0), sharedinfo=ephemeral).derive(secret)
        return material[:16], (material[16:] if variable else bytes(16))
    sealed = open('ours.ct', 'rb').read()
    ephemeral = sealed[:65]
    key, nonce = schedule(private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ephemeral)), ephemeral)
    assert AESGCM(key).decrypt(nonce, sealed[65:], None) == open('msg', 'rb').read()
    mine = ec.generate_private_key(ec.SECP256R1())
    key, nonce = schedule(mine.exchange(ec.ECDH(), public), point(mine))
    open('theirs.ct', 'wb').write(point(mine) + AESGCM(key).encrypt(nonce, open('msg', 'rb').read(), None))
    print('ok')
    """
