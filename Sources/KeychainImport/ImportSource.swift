import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// One thing `security import-keyring` reads: a file of another password store, or a `pass` store, found from the
/// paths a person named.
package struct ImportSource: Sendable, Hashable {
    /// The stores read.
    package enum Format: String, CaseIterable, Sendable {
        /// gnome-keyring's keyring files (`~/.local/share/keyrings/*.keyring`).
        case gnomeKeyring = "gnome-keyring"
        /// KWallet's wallet files (`~/.local/share/kwalletd/*.kwl`).
        case kwallet
        /// KeePass databases (KeePassXC, KeePass 2): KDBX 4 and 3.1.
        case kdbx
        /// `pass` stores (`~/.password-store`).
        case pass
    }

    /// What it is.
    package var format: Format
    /// Where it is.
    package var path: String
    /// What it is called in messages and prompts: the file's name without its extension, or the folder's.
    package var name: String

    /// The largest file read (KeePass databases with attachments can be big; nothing larger is a password store).
    package static let maximumFileSize = 256 << 20

    /// The sources at `paths`: a file by its extension (or `format`); a folder that is a `pass` store; any other
    /// folder, the keyrings (`.keyring`), wallets (`.kwl`) and KeePass databases (`.kdbx`) in it, as in
    /// `~/.local/share/keyrings`.
    package static func find(_ paths: [String], format: Format? = nil) throws(KeychainError) -> [ImportSource] {
        var found: [ImportSource] = []
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw KeychainError(code: .invalidParameter, message: "\(path) does not exist, or cannot be reached.")
            }
            let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
            if info.st_mode & S_IFMT == S_IFDIR {
                if format == .pass || (format == nil && PassStore.isStore(path)) {
                    found.append(ImportSource(format: .pass, path: path, name: name))
                    continue
                }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                var inFolder: [ImportSource] = []
                for file in names.sorted() {
                    guard let kind = Self.format(ofFile: file), format == nil || format == kind else { continue }
                    inFolder.append(ImportSource(format: kind, path: path + "/" + file, name: (file as NSString).deletingPathExtension))
                }
                guard !inFolder.isEmpty else {
                    throw KeychainError(
                        code: .invalidParameter,
                        message:
                            "\(path) holds no keyring (.keyring), wallet (.kwl) or KeePass database (.kdbx), and is not a pass store (no .gpg-id). Name the files to import, or the store's folder.")
                }
                found += inFolder
            } else {
                guard let kind = format ?? Self.format(ofFile: path) else {
                    throw KeychainError(
                        code: .invalidParameter,
                        message: "\(path): which store wrote it cannot be told from its name. Say it with --format \(Format.allCases.map(\.rawValue).joined(separator: "|")).")
                }
                guard kind != .pass else {
                    throw KeychainError(code: .invalidParameter, message: "\(path) is a file; a pass store is a folder (~/.password-store).")
                }
                found.append(ImportSource(format: kind, path: path, name: name))
            }
        }
        return found
    }

    /// The format a file's extension says.
    static func format(ofFile name: String) -> Format? {
        switch (name as NSString).pathExtension.lowercased() {
        case "keyring": .gnomeKeyring
        case "kwl": .kwallet
        case "kdbx": .kdbx
        default: nil
        }
    }

    /// What a prompt for this source's password says it is for (nil: none is needed).
    package func passwordPurpose() throws(KeychainError) -> String? {
        switch format {
        case .pass: return nil
        case .gnomeKeyring: return GnomeKeyringFile.isEncrypted(try contents(upTo: GnomeKeyringFile.magic.count)) ? "the keyring '\(name)'" : nil
        case .kwallet: return "the wallet '\(name)'"
        case .kdbx: return "the KeePass database '\(name)'"
        }
    }

    /// The file's bytes (a link the person named is followed; a file over ``maximumFileSize`` is refused), or with
    /// `upTo`, at most its first so many bytes.
    func contents(of file: String? = nil, upTo prefix: Int? = nil) throws(KeychainError) -> Data {
        let target = file ?? path
        let fd = open(target, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw KeychainError(code: .io, message: "\(target) cannot be read (errno \(errno)).")
        }
        defer { close(fd) }
        if let prefix {
            var head = [UInt8](repeating: 0, count: prefix)
            let count = head.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, prefix) }
            guard count >= 0 else { throw KeychainError(code: .io, message: "\(target) cannot be read (errno \(errno)).") }
            return Data(head.prefix(count))
        }
        guard let data = FileSystem.readAll(fd, limit: Self.maximumFileSize) else {
            throw KeychainError(code: .invalidParameter, message: "\(target) cannot be read, or is larger than \(Self.maximumFileSize >> 20) MiB: not a password store's file.")
        }
        return data
    }

    /// Reads the source.
    ///
    /// - Parameters:
    ///   - password: Its password (gnome-keyring, KWallet, KeePass; empty for a KeePass database opened by its key
    ///     file alone).
    ///   - keyFile: A KeePass database's key file.
    ///   - gpg: The GnuPG program `pass` entries are decrypted with.
    ///   - progress: Called as a `pass` store's entries are decrypted (done, in all).
    package func read(
        password: String?, keyFile: String? = nil, gpg: String = "gpg",
        progress: (Int, Int) -> Void = { _, _ in }
    ) throws(KeychainError) -> ImportedCollection {
        switch format {
        case .gnomeKeyring:
            let folder = (path as NSString).deletingLastPathComponent
            let named = (try? String(contentsOfFile: folder + "/default", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            let isDefault = named.map { $0 == name } ?? (name == "login")
            return try GnomeKeyringFile.read(try contents(), password: password, name: name, isDefault: isDefault)
        case .kwallet:
            let saltPath = ((path as NSString).deletingPathExtension) + ".salt"
            let salt = FileManager.default.fileExists(atPath: saltPath) ? try contents(of: saltPath) : nil
            var info = stat()
            let modified = stat(path, &info) == 0 ? Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec)) : Date()
            return try KWalletFile.read(try contents(), password: password ?? "", salt: salt, name: name, modified: modified)
        case .kdbx:
            let key = try keyFile.map { file throws(KeychainError) in try contents(of: file) }
            let given = password.flatMap { $0.isEmpty && key != nil ? nil : $0 }
            return try KDBXFile.read(try contents(), password: given, keyFile: key, name: name)
        case .pass:
            return try PassStore.read(path, gpg: gpg, progress: progress)
        }
    }
}
