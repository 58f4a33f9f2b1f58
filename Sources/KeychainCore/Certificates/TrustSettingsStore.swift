import Foundation
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The trust settings of the three domains (Apple's `SecTrustSettings…` functions): the user's in a file of their
/// own (0600), the administrator's in `/etc/keychain` (0644, root only), the system's derived from System Roots
/// (every root `trustRoot`, read-only). Files are in Apple's external representation (``TrustSettingsFile``),
/// written atomically and never through a link; see ``TrustStoreLocation`` for the paths.
package enum TrustSettingsStore {
    /// The settings file of `domain`, or nil for the system domain.
    package static func path(_ domain: TrustSettingsDomain, _ location: TrustStoreLocation) -> String? {
        switch domain {
        case .user: location.userTrustSettings
        case .admin: location.adminTrustSettings
        case .system: nil
        }
    }

    /// The settings of a domain (the system's: a record per System Root, with no constraints).
    package static func read(_ domain: TrustSettingsDomain, environment: [String: String] = KeychainLocation.processEnvironment()) throws(KeychainError) -> TrustSettingsFile {
        try read(domain, location: TrustStoreLocation.fromEnvironment(environment))
    }

    /// The settings of a domain whose files are at `location`.
    package static func read(_ domain: TrustSettingsDomain, location: TrustStoreLocation) throws(KeychainError) -> TrustSettingsFile {
        guard let path = path(domain, location) else {
            var file = TrustSettingsFile()
            for root in try SystemRoots.snapshot(bundle: location.systemRootsBundle, folder: location.systemRootsFolder).certificates {
                file.records[root.sha1Fingerprint] = record(root, constraints: [], date: Date(timeIntervalSince1970: 0))
            }
            return file
        }
        guard let data = try FileSystem.read(path) else { return TrustSettingsFile() }
        do {
            return try TrustSettingsFile(propertyList: data)
        } catch {
            throw KeychainError(code: error.code, status: error.status, message: "\(path): \(error.message) Remove the file or fix it.")
        }
    }

    /// `SecTrustSettingsCopyTrustSettings`: the certificate's usage constraints in `domain`; `errSecItemNotFound`
    /// when it has none there.
    package static func settings(
        for certificate: CertificateData, domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) -> [TrustSettingsConstraint] {
        guard let record = try read(domain, environment: environment).records[certificate.sha1Fingerprint] else {
            throw KeychainError(code: .itemNotFound, message: "The certificate has no trust settings in the \(domain) domain.")
        }
        return record.constraints
    }

    /// `SecTrustSettingsSetTrustSettings`: replaces the certificate's settings in `domain` (an empty array: always
    /// trusted as a root). The system domain is read-only (`errSecDataNotModifiable`); the admin domain needs root
    /// (`errSecWrPerm`); `trustRoot` on a certificate that is not self-signed is `errSecParam`.
    package static func set(
        _ constraints: [TrustSettingsConstraint], for certificate: CertificateData, domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) {
        if !certificate.isSelfSigned, constraints.contains(where: { ($0.result ?? .trustRoot) == .trustRoot }) {
            throw KeychainError(
                code: .invalidParameter, message: "Only a self-signed certificate can be a trusted root; use trustAsRoot (add-trusted-cert -r trustAsRoot) for an intermediate or a leaf.")
        }
        try update(domain, environment: environment) { file in
            file.records[certificate.sha1Fingerprint] = record(certificate, constraints: constraints, date: Date())
        }
    }

    /// `SecTrustSettingsRemoveTrustSettings`: `errSecItemNotFound` when the certificate has none in `domain`.
    package static func remove(
        _ certificate: CertificateData, domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) {
        try update(domain, environment: environment) { file throws(KeychainError) in
            guard file.records.removeValue(forKey: certificate.sha1Fingerprint) != nil else {
                throw KeychainError(code: .itemNotFound, message: "The certificate has no trust settings in the \(domain) domain.")
            }
        }
    }

    /// `SecTrustSettingsCopyCertificates`: the certificates with settings in `domain`, by SHA-1, each with its
    /// certificate when the settings carry it or it is a System Root (imported settings name only the hash);
    /// `errSecNoTrustSettings` when the domain has none.
    package static func certificates(
        _ domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) -> [(CertificateData?, String, TrustSettingsRecord)] {
        let location = TrustStoreLocation.fromEnvironment(environment)
        let file = try read(domain, location: location)
        guard !file.records.isEmpty else { throw noSettings(domain) }
        var system: [String: CertificateData]?
        return try file.records.sorted { $0.key < $1.key }.map { entry throws(KeychainError) in
            let (hash, record) = (entry.key, entry.value)
            if let certificate = record.certificate.flatMap({ try? CertificateData(der: $0) }) { return (certificate, hash, record) }
            if system == nil {
                let roots = try SystemRoots.snapshot(bundle: location.systemRootsBundle, folder: location.systemRootsFolder).certificates
                system = Dictionary(roots.map { ($0.sha1Fingerprint, $0) }, uniquingKeysWith: { first, _ in first })
            }
            return (system?[hash], hash, record)
        }
    }

    /// `SecTrustSettingsCreateExternalRepresentation`: the domain's settings as Apple's property list;
    /// `errSecNoTrustSettings` when it has none.
    package static func externalRepresentation(
        _ domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) -> Data {
        let file = try read(domain, environment: environment)
        guard !file.records.isEmpty else { throw noSettings(domain) }
        return try file.propertyList(includingCertificates: false)
    }

    /// `SecTrustSettingsImportExternalRepresentation`: replaces the domain's settings with those of `data`
    /// (certificates already known keep their DER).
    package static func importExternalRepresentation(
        _ data: Data, domain: TrustSettingsDomain,
        environment: [String: String] = KeychainLocation.processEnvironment()
    ) throws(KeychainError) {
        var imported = try TrustSettingsFile(propertyList: data)
        try update(domain, environment: environment) { file in
            for (hash, record) in imported.records where record.certificate == nil {
                imported.records[hash]?.certificate = file.records[hash]?.certificate
            }
            file = imported
        }
    }

    /// What the settings decide for `certificate` under `policy`: the user's first, then the administrator's, then
    /// the system's (a System Root is a trusted root); nil when none decides.
    package static func decision(
        for certificate: CertificateData, policy: TrustPolicyIdentifier, hostname: String?,
        domains: [TrustSettingsDomain: TrustSettingsFile], systemRoots: SystemRootsSnapshot?
    ) -> TrustSettingsResult? {
        let hash = certificate.sha1Fingerprint
        for domain in [TrustSettingsDomain.user, .admin] {
            if let record = domains[domain]?.records[hash],
                let result = record.decision(for: policy, hostname: hostname, selfSigned: certificate.isSelfSigned)
            {
                return result
            }
        }
        if let systemRoots, systemRoots.contains(certificate) { return .trustRoot }
        return nil
    }

    // MARK: Writing

    private static func update(
        _ domain: TrustSettingsDomain, environment: [String: String],
        _ change: (inout TrustSettingsFile) throws(KeychainError) -> Void
    ) throws(KeychainError) {
        let location = TrustStoreLocation.fromEnvironment(environment)
        guard let path = path(domain, location) else {
            throw KeychainError(
                code: .invalidParameter, status: .dataNotModifiable,
                message: "The system trust settings are the System Roots and cannot be changed; use the user or the admin domain.")
        }
        let folder = NSStringPath(path).deletingLastPathComponent
        if domain == .admin {
            guard geteuid() == 0 else {
                throw KeychainError(
                    code: .authenticationFailed, status: .writePermission,
                    message: "Changing the admin trust settings (\(path)) needs root: run the command with sudo, or change your own (user) trust settings instead.")
            }
            try makeSharedFolder(folder)
        } else {
            try FileSystem.ensurePrivateDirectory(folder)
        }
        try FileSystem.withExclusiveLock(path + ".lock") { () throws(KeychainError) in
            var file = try read(domain, location: location)
            try change(&file)
            try FileSystem.writeAtomically(
                try file.propertyList(includingCertificates: true), to: path, exclusive: false,
                mode: domain == .admin ? 0o644 : 0o600)
        }
    }

    /// Creates an administrator's folder (0755, root's) when missing; refuses one that is a link or others may write.
    package static func makeSharedFolder(_ folder: String) throws(KeychainError) {
        if mkdir(folder, 0o755) != 0 && errno != EEXIST { throw FileSystem.ioError("create the folder", folder) }
        var info = stat()
        guard lstat(folder, &info) == 0 else { throw FileSystem.ioError("examine", folder) }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            throw KeychainError(code: .io, message: "\(folder) must be a folder of root's that only root can write (not a link). Fix it, then try again.")
        }
    }

    private static func noSettings(_ domain: TrustSettingsDomain) -> KeychainError {
        KeychainError(code: .itemNotFound, status: .noTrustSettings, message: "The \(domain) domain has no trust settings.")
    }

    private static func record(_ certificate: CertificateData, constraints: [TrustSettingsConstraint], date: Date) -> TrustSettingsRecord {
        TrustSettingsRecord(
            issuerName: certificate.issuerDER, serialNumber: certificate.serialNumber, modificationDate: date,
            constraints: constraints, certificate: certificate.der)
    }
}

extension CertificateData {
    /// Whether the certificate is self-signed: its issuer is its subject and its own key verifies its signature.
    package var isSelfSigned: Bool {
        certificate.issuer == certificate.subject && certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
    }

    /// The DER of the issuer's name.
    package var issuerDER: Data {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate.issuer)) != nil else { return Data() }
        return Data(serializer.serializedBytes)
    }
}
