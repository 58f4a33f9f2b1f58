import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway SoftHSM token for the PKCS#11 tests: its own token folder and `softhsm2.conf` in a temporary
/// folder, initialised with `softhsm2-util`, holding
///
/// - an RSA-2048 key pair made by `openssl` and imported with `pkcs11-tool` (CKA_ID ``rsaKeyID``, label
///   ``rsaLabel``), with a self-signed certificate for it (same CKA_ID, label ``certificateLabel``);
/// - an EC P-256 key pair generated on the token by `pkcs11-tool --keypairgen` (CKA_ID ``ecKeyID``, label
///   ``ecLabel``), whose public key is read back with `pkcs11-tool` for the tests' independent checks.
///
/// One token per test process (``shared()``): SoftHSM reads `SOFTHSM2_CONF` in its `C_Initialize`, and p11-kit
/// initialises it once for every registry in the process, so the first registry to load fixes which token folder
/// the process sees. ``shared()`` sets `SOFTHSM2_CONF` (with `setenv`) before returning; tests must get it before
/// they load any `PKCS11Registry`, and must not expect a token of their own (make keys with fresh CKA_IDs instead).
/// The folder is removed when the process exits.
public final class SoftHSMToken: Sendable {
    /// The token's label.
    public static let label = "swift-keychain test token"
    /// The user PIN (a test fixture's; passed to `softhsm2-util` and `pkcs11-tool` on their command lines).
    public static let pin = "123456"
    /// The security officer's PIN.
    public static let soPIN = "87654321"
    /// CKA_ID of the RSA key pair and its certificate.
    public static let rsaKeyID = Data([0x01])
    /// CKA_ID of the EC key pair.
    public static let ecKeyID = Data([0x02])
    /// CKA_LABEL of the RSA keys.
    public static let rsaLabel = "Test RSA Key"
    /// CKA_LABEL of the certificate.
    public static let certificateLabel = "Test Certificate"
    /// CKA_LABEL of the EC keys.
    public static let ecLabel = "Test EC Key"

    /// The temporary folder (the configuration, the token folder, the files below).
    public let directory: String
    /// The `softhsm2.conf` this token's processes read (`SOFTHSM2_CONF`).
    public let configurationPath: String
    /// SoftHSM's PKCS#11 module, as p11-kit's `softhsm2.module` names it.
    public let modulePath: String
    /// The token's serial number, as SoftHSM gave it.
    public let serial: String
    /// The RSA public key as PEM (SubjectPublicKeyInfo), for `openssl … -verify`.
    public let rsaPublicKeyPEMPath: String
    /// The RSA public key as PKCS#1 RSAPublicKey DER (Apple's external representation), from `openssl`.
    public let rsaPublicKeyPKCS1: Data
    /// The EC public key as PEM (SubjectPublicKeyInfo), read from the token by `pkcs11-tool`.
    public let ecPublicKeyPEMPath: String
    /// The EC public point, X9.63 `04‖X‖Y`, from the same SubjectPublicKeyInfo.
    public let ecPublicKeyX963: Data
    /// The certificate's DER.
    public let certificateDER: Data

    /// The environment for programs that should see this token (`pkcs11-tool`, `openssl`, a `security` run).
    public var environment: [String: String] { ["PATH": "/usr/bin:/bin", "SOFTHSM2_CONF": configurationPath] }

    // MARK: Availability

    /// `name` on the `PATH` (or in /usr/bin, /bin), if it is there.
    public static func program(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin"]
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// SoftHSM's module: the `module:` line of p11-kit's `softhsm2.module` (the administrator's in /etc/pkcs11/modules
    /// first), a bare file name resolved in p11-kit's module folder; nil when p11-kit is not configured for it.
    public static var configuredModulePath: String? {
        for config in ["/etc/pkcs11/modules/softhsm2.module", "/usr/share/p11-kit/modules/softhsm2.module"] {
            guard let text = try? String(contentsOfFile: config, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == "module" else { continue }
                let module = parts[1].trimmingCharacters(in: .whitespaces)
                let candidates =
                    module.hasPrefix("/")
                    ? [module]
                    : ["/usr/lib/x86_64-linux-gnu/pkcs11", "/usr/lib/aarch64-linux-gnu/pkcs11", "/usr/lib64/pkcs11", "/usr/lib/pkcs11"].map { "\($0)/\(module)" }
                return candidates.first { FileManager.default.fileExists(atPath: $0) }
            }
        }
        return nil
    }

    /// Whether libp11-kit.so.0 loads (what the registry opens).
    static var p11KitLoads: Bool {
        guard let library = dlopen("libp11-kit.so.0", RTLD_NOW | RTLD_LOCAL) else { return false }
        dlclose(library)
        return true
    }

    /// Whether the token can be made: `softhsm2-util`, `pkcs11-tool` (OpenSC) and `openssl` installed, SoftHSM's
    /// module configured for p11-kit, and libp11-kit present.
    public static var available: Bool {
        program("softhsm2-util") != nil && program("pkcs11-tool") != nil && program("openssl") != nil && configuredModulePath != nil && p11KitLoads
    }

    // MARK: The shared token

    private static let made = Result { () throws -> SoftHSMToken in try SoftHSMToken() }

    /// The process's token, made on first use (see the type's description).
    public static func shared() throws -> SoftHSMToken { try made.get() }

    // MARK: Making it

    private init() throws {
        guard let softhsm = Self.program("softhsm2-util"), let tool = Self.program("pkcs11-tool"), let openssl = Self.program("openssl"),
            let module = Self.configuredModulePath
        else {
            throw TestProcessError("SoftHSM, OpenSC's pkcs11-tool or openssl is not installed, or p11-kit has no softhsm2.module")
        }
        modulePath = module
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("softhsm-\(UUID().uuidString)").path
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory + "/tokens", withIntermediateDirectories: true)
        let made = directory
        softHSMFolders.withLock { $0.append(made) }
        configurationPath = directory + "/softhsm2.conf"
        let configuration = """
            directories.tokendir = \(directory)/tokens
            objectstore.backend = file
            log.level = ERROR
            slots.removable = false

            """
        guard FileManager.default.createFile(atPath: configurationPath, contents: Data(configuration.utf8)) else {
            throw TestProcessError("Cannot write \(configurationPath)")
        }
        // For this process's registry, before anything loads SoftHSM.
        guard setenv("SOFTHSM2_CONF", configurationPath, 1) == 0 else { throw TestProcessError("setenv SOFTHSM2_CONF failed") }

        let environment = ["PATH": "/usr/bin:/bin", "SOFTHSM2_CONF": configurationPath]
        func run(_ program: String, _ arguments: [String]) throws -> ProgramRun {
            let run = try ProgramRun.run(program, arguments, environment: environment, directory: directory, scratch: directory, timeout: 120)
            guard run.status == 0 else {
                throw TestProcessError("\(program) \(arguments.first ?? "") failed (\(run.status)): \(run.stderr)\(run.stdout)")
            }
            return run
        }
        let onToken = ["--module", module, "--token-label", Self.label, "--login", "--pin", Self.pin]

        _ = try run(softhsm, ["--init-token", "--free", "--label", Self.label, "--so-pin", Self.soPIN, "--pin", Self.pin])
        serial = try Self.serial(of: Self.label, in: run(softhsm, ["--show-slots"]).stdout)

        // RSA: made by openssl, with a self-signed certificate, imported.
        _ = try run(openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"])
        _ = try run(openssl, ["req", "-new", "-x509", "-key", "rsa.pem", "-subj", "/CN=swift-keychain PKCS11 test", "-days", "30", "-outform", "DER", "-out", "cert.der"])
        _ = try run(openssl, ["pkcs8", "-topk8", "-nocrypt", "-in", "rsa.pem", "-outform", "DER", "-out", "rsa.p8"])
        _ = try run(openssl, ["pkey", "-in", "rsa.pem", "-pubout", "-out", "rsa-pub.pem"])
        _ = try run(openssl, ["pkey", "-in", "rsa.pem", "-pubout", "-outform", "DER", "-out", "rsa-pub.der"])
        _ = try run(openssl, ["rsa", "-pubin", "-in", "rsa-pub.pem", "-RSAPublicKey_out", "-outform", "DER", "-out", "rsa-pkcs1.der"])
        let id = Self.rsaKeyID.map { String(format: "%02x", $0) }.joined()
        _ = try run(tool, onToken + ["--write-object", "rsa.p8", "--type", "privkey", "--id", id, "--label", Self.rsaLabel, "--usage-sign", "--usage-decrypt"])
        _ = try run(tool, onToken + ["--write-object", "rsa-pub.der", "--type", "pubkey", "--id", id, "--label", Self.rsaLabel])
        _ = try run(tool, onToken + ["--write-object", "cert.der", "--type", "cert", "--id", id, "--label", Self.certificateLabel])
        // The private key leaves nothing behind but the token's copy.
        try FileManager.default.removeItem(atPath: directory + "/rsa.pem")
        try FileManager.default.removeItem(atPath: directory + "/rsa.p8")

        // EC: generated on the token; its public key read back.
        let ecID = Self.ecKeyID.map { String(format: "%02x", $0) }.joined()
        _ = try run(
            tool, onToken + ["--keypairgen", "--key-type", "EC:prime256v1", "--id", ecID, "--label", Self.ecLabel, "--usage-sign", "--usage-derive"])
        _ = try run(tool, ["--module", module, "--token-label", Self.label, "--read-object", "--type", "pubkey", "--id", ecID, "-o", "ec-pub.der"])
        _ = try run(openssl, ["pkey", "-pubin", "-inform", "DER", "-in", "ec-pub.der", "-out", "ec-pub.pem"])

        rsaPublicKeyPEMPath = directory + "/rsa-pub.pem"
        ecPublicKeyPEMPath = directory + "/ec-pub.pem"
        rsaPublicKeyPKCS1 = try Data(contentsOf: URL(fileURLWithPath: directory + "/rsa-pkcs1.der"))
        certificateDER = try Data(contentsOf: URL(fileURLWithPath: directory + "/cert.der"))
        // A P-256 SubjectPublicKeyInfo ends with its BIT STRING's content: the 65-byte point.
        let spki = try Data(contentsOf: URL(fileURLWithPath: directory + "/ec-pub.der"))
        guard spki.count == 91, spki.suffix(65).first == 0x04 else { throw TestProcessError("pkcs11-tool wrote an unexpected EC public key") }
        ecPublicKeyX963 = Data(spki.suffix(65))
    }

    /// The serial of the token labelled `label` in `softhsm2-util --show-slots` output (its "Serial number:" line
    /// comes before its "Label:" line).
    static func serial(of label: String, in slots: String) throws -> String {
        var serial: String?
        for line in slots.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Serial number:") {
                serial = text.dropFirst("Serial number:".count).trimmingCharacters(in: .whitespaces)
            } else if text.hasPrefix("Label:"), text.dropFirst("Label:".count).trimmingCharacters(in: .whitespaces) == label, let serial, !serial.isEmpty {
                return serial
            }
        }
        throw TestProcessError("softhsm2-util --show-slots does not list the token \(label)")
    }
}

/// The folders of the tokens made in this process, removed when it exits.
private let softHSMFolders: Mutex<[String]> = {
    atexit {
        for folder in softHSMFolders.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: folder) }
    }
    return Mutex([])
}()
