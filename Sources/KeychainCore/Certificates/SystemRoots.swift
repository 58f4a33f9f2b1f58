import Crypto
import Foundation
import Synchronization
import SwiftASN1

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The System Roots at one moment: every certificate of the distribution's trust store, once each.
package struct SystemRootsSnapshot: Sendable {
    /// The roots, de-duplicated by DER: the bundle's in file order, then the folder's by file name.
    package var certificates: [CertificateData]
    /// SHA-256 over the sorted DERs (each preceded by its 4-byte big-endian length): it changes exactly when the
    /// set of roots changes, not when a file is merely touched.
    package var digest: [UInt8]

    /// A snapshot of these certificates, with their digest.
    package init(certificates: [CertificateData]) {
        self.certificates = certificates
        var hash = SHA256()
        for der in certificates.map({ Array($0.der) }).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let count = UInt32(der.count)
            hash.update(data: [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)])
            hash.update(data: der)
        }
        digest = Array(hash.finalize())
    }

    /// Whether `certificate` is one of the roots (same DER).
    package func contains(_ certificate: CertificateData) -> Bool {
        certificates.contains { $0.der == certificate.der }
    }
}

/// The distribution's trust store read as Apple's System Roots keychain: Debian's bundle
/// (`/etc/ssl/certs/ca-certificates.crt`) and the folder `/etc/ssl/certs` (PEM, CRT and DER files), or what
/// `KEYCHAIN_SYSTEM_ROOTS` / `KEYCHAIN_SYSTEM_ROOTS_DIR` name (see ``TrustStoreLocation``).
///
/// The roots are kept in memory and read again only when the bundle or the folder changes: each call compares
/// stat stamps (inode, size, modification time in nanoseconds) of the bundle, of the folder itself and of each of
/// its entries with those of the last read.
package enum SystemRoots {
    /// The current System Roots.
    ///
    /// - Throws: `KeychainError` with `errSecIO` when the bundle or the folder exists but cannot be read; a
    ///   missing bundle or folder is an empty one.
    package static func snapshot(_ environment: [String: String] = KeychainLocation.processEnvironment()) throws(KeychainError) -> SystemRootsSnapshot {
        let location = TrustStoreLocation.fromEnvironment(environment)
        return try snapshot(bundle: location.systemRootsBundle, folder: location.systemRootsFolder)
    }

    /// The roots of this bundle and folder (either may be nil: none).
    package static func snapshot(bundle: String?, folder: String?) throws(KeychainError) -> SystemRootsSnapshot {
        let key = Source(bundle: bundle, folder: folder)
        let stamps = try currentStamps(key)
        if let cached = cache.withLock({ $0[key] }), cached.stamps == stamps { return cached.snapshot }
        var seen = Set<Data>()
        var roots: [CertificateData] = []
        func add(_ data: Data) {
            // De-duplicated before parsing: Debian's folder repeats every root of the bundle.
            for der in derBlocks(in: data) where seen.insert(der).inserted {
                if let certificate = try? CertificateData(der: der) { roots.append(certificate) }
            }
        }
        if let bundle, let data = try FileSystem.read(bundle, followingLinks: true) { add(data) }
        if let folder {
            for name in stamps.entries.map(\.name) {
                if let data = try? FileSystem.read(folder + "/" + name, followingLinks: true) { add(data) }
            }
        }
        let snapshot = SystemRootsSnapshot(certificates: roots)
        cache.withLock { $0[key] = Cached(stamps: stamps, snapshot: snapshot) }
        return snapshot
    }

    /// The certificate DERs of a file: every CERTIFICATE block of a PEM file, or the file itself (DER). Blocks
    /// swift-certificates cannot parse are skipped later (a trust store may carry key types it does not know).
    static func derBlocks(in data: Data) -> [Data] {
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            guard let documents = try? PEMDocument.parseMultiple(pemString: text) else { return [] }
            return documents.filter { $0.discriminator == "CERTIFICATE" || $0.discriminator == "TRUSTED CERTIFICATE" }.map { Data($0.derBytes) }
        }
        return [data]
    }

    // MARK: Change detection

    private struct Source: Hashable {
        var bundle: String?
        var folder: String?
    }

    /// What identifies a file's version without reading it.
    struct Stamp: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int64
        var modifiedNanoseconds: Int64
    }

    private struct Entry: Hashable {
        var name: String
        var stamp: Stamp
    }

    private struct Stamps: Hashable {
        var bundle: Stamp?
        var folder: Stamp?
        var entries: [Entry] = []
    }

    private struct Cached {
        var stamps: Stamps
        var snapshot: SystemRootsSnapshot
    }

    private static let cache = Mutex<[Source: Cached]>([:])

    /// The file extensions read from the folder (Debian's hash links, `*.0`, name the same files again).
    private static let rootFileSuffixes = [".pem", ".crt", ".der", ".cer"]

    private static func currentStamps(_ source: Source) throws(KeychainError) -> Stamps {
        var stamps = Stamps()
        if let bundle = source.bundle { stamps.bundle = stamp(bundle) }
        if let folder = source.folder, let folderStamp = stamp(folder) {
            stamps.folder = folderStamp
            guard let directory = opendir(folder) else {
                throw KeychainError(code: .io, message: "Cannot list the system roots folder \(folder): \(String(cString: strerror(errno))). Check its permissions or set KEYCHAIN_SYSTEM_ROOTS_DIR.")
            }
            defer { closedir(directory) }
            var names: [String] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if rootFileSuffixes.contains(where: { name.lowercased().hasSuffix($0) }) { names.append(name) }
            }
            for name in names.sorted() {
                if let entryStamp = stamp(folder + "/" + name) { stamps.entries.append(Entry(name: name, stamp: entryStamp)) }
            }
        }
        return stamps
    }

    /// The stamp of what `path` names (links followed: Debian's folder is made of links), or nil when it is missing.
    static func stamp(_ path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Stamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modifiedSeconds: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec))
    }
}
