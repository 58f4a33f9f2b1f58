import Foundation
import Crypto
import CryptoExtras

/// The passcode's key-derivation parameters: scrypt (swift-crypto's `KDF.Scrypt`, BoringSSL underneath),
/// calibrated when the passcode is set to use at least 64 MiB and take at least 250 ms on that machine.
///
/// Two encodings, both `u8 log2(N) | u32 r | u32 p | u32-prefixed salt`, the second followed by `u32 calibrated
/// milliseconds` (the measured time of one derivation with these parameters on the machine that set them):
/// KDF kind 1 (keybag version 2 and backups) and kind 2 (keybag version 3).
package struct PasscodeKDF: Sendable, Hashable {
    /// Kind 1: scrypt parameters alone (keybag version 2, backups).
    static let scryptKind: UInt8 = 1
    /// Kind 2: scrypt parameters and the calibration's measured time (keybag version 3).
    static let calibratedScryptKind: UInt8 = 2
    /// log2 of scrypt's cost N.
    package var log2N: UInt8
    /// scrypt's block size r.
    package var blockSize: UInt32
    /// scrypt's parallelism p (BoringSSL runs the p lanes one after the other over the same N·r memory, so p
    /// raises the time without raising the memory).
    package var parallelism: UInt32
    /// The random salt.
    package var salt: [UInt8]
    /// How long one derivation took on the machine that chose these parameters, in milliseconds (0: not
    /// recorded, as in keybag version 2).
    package var calibratedMilliseconds: UInt32

    package init(log2N: UInt8, blockSize: UInt32 = 8, parallelism: UInt32 = 1, salt: [UInt8], calibratedMilliseconds: UInt32 = 0) {
        self.log2N = log2N
        self.blockSize = blockSize
        self.parallelism = parallelism
        self.salt = salt
        self.calibratedMilliseconds = calibratedMilliseconds
    }

    init(decoding bytes: ArraySlice<UInt8>, kind: UInt8 = PasscodeKDF.scryptKind) throws(KeychainError) {
        var r = BinaryReader(bytes)
        do {
            log2N = try r.u8()
            blockSize = try r.u32()
            parallelism = try r.u32()
            salt = Array(try r.lengthPrefixed())
            calibratedMilliseconds = kind == PasscodeKDF.calibratedScryptKind ? try r.u32() : 0
        } catch {
            throw Keybag.corrupt
        }
        // Refuse parameters no honest keybag has (a tampered file must not make us allocate gigabytes or spin
        // for minutes).
        guard r.isAtEnd, (10...22).contains(log2N), (1...32).contains(blockSize), (1...64).contains(parallelism),
            (16...64).contains(salt.count), memory <= 1 << 30, work <= 1 << 26
        else { throw Keybag.corrupt }
    }

    /// The memory scrypt needs with these parameters (128 · r · (N + p + 2) bytes, rounded up).
    package var memory: Int { 128 * Int(blockSize) * ((1 << Int(log2N)) + Int(parallelism) + 2) }

    /// N · r · p, which the time grows with.
    var work: Int { (1 << Int(log2N)) * Int(blockSize) * Int(parallelism) }

    /// Kind 1's bytes.
    var encoded: [UInt8] {
        var w = BinaryWriter(capacity: 48)
        w.u8(log2N)
        w.u32(blockSize)
        w.u32(parallelism)
        w.lengthPrefixed(salt)
        return w.bytes
    }

    /// Kind 2's bytes.
    var encodedCalibrated: [UInt8] {
        var w = BinaryWriter(capacity: 52)
        w.raw(encoded)
        w.u32(calibratedMilliseconds)
        return w.bytes
    }

    /// Stretches a passcode into 32 bytes.
    package func derive(_ passcode: String) throws(KeychainError) -> SymmetricKey {
        do {
            return try KDF.Scrypt.deriveKey(
                from: Array(passcode.utf8), salt: salt, outputByteCount: 32,
                rounds: 1 << Int(log2N), blockSize: Int(blockSize),
                parallelism: Int(parallelism),
                maxMemory: memory + (1 << 20))
        } catch {
            throw KeychainError(code: .internal, message: "The passcode could not be stretched (scrypt failed).", cause: DescribedError(error))
        }
    }

    // MARK: Calibration

    /// What calibration aims for.
    package struct Policy: Sendable, Hashable {
        /// log2 of the smallest N; with ``blockSize`` it sets the memory floor (128 · r · N bytes).
        package var minimumLog2N: UInt8
        /// scrypt's r.
        package var blockSize: UInt32
        /// The least time one derivation should take on this machine, in seconds.
        package var targetSeconds: Double

        package init(minimumLog2N: UInt8, blockSize: UInt32 = 8, targetSeconds: Double) {
            self.minimumLog2N = minimumLog2N
            self.blockSize = blockSize
            self.targetSeconds = targetSeconds
        }

        /// What a passcode gets: N = 2^16 and r = 8 (64 MiB), and enough parallelism for 250 ms.
        package static let production = Policy(minimumLog2N: 16, blockSize: 8, targetSeconds: 0.25)
        /// Cheap parameters for tests that set many passcodes (1 MiB, 1 ms), given to a test's engine
        /// (`KeychainEngine(passcodePolicy:)`); no public API and no environment variable reaches it.
        package static let testing = Policy(minimumLog2N: 10, blockSize: 8, targetSeconds: 0.001)
    }

    /// Parameters with a fresh salt, calibrated on this machine: N and r from `policy` (N raised only when even
    /// p = 64 would be too fast), p so that one derivation takes at least the policy's time; the time of one
    /// derivation with the final parameters is measured and recorded.
    package static func tuned(
        policy: Policy = .production,
        random: any RandomSource = SystemRandom()
    ) -> PasscodeKDF {
        var parameters = PasscodeKDF(log2N: policy.minimumLog2N, blockSize: policy.blockSize, salt: random.bytes(32))
        var single = seconds(parameters)
        while single * 64 < policy.targetSeconds, parameters.log2N < 20 {
            parameters.log2N += 1
            single = seconds(parameters)
        }
        let lanes = (policy.targetSeconds / max(single, 1e-6)).rounded(.up)
        parameters.parallelism = UInt32(min(max(lanes, 1), 64))
        // Keep within what decoding accepts, whatever this machine measured.
        while parameters.work > 1 << 26, parameters.parallelism > 1 { parameters.parallelism -= 1 }
        // With one lane at the floor's N, the probe already was one derivation with the final parameters.
        let measured = parameters.parallelism == 1 ? single : seconds(parameters)
        parameters.calibratedMilliseconds = UInt32(min(max((measured * 1000).rounded(.up), 1), Double(UInt32.max)))
        return parameters
    }

    private static func seconds(_ parameters: PasscodeKDF) -> Double {
        let elapsed = ContinuousClock().measure { _ = try? parameters.derive("calibration") }
        return elapsed.timeInterval
    }
}
