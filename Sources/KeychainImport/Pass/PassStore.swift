import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// A `pass` store (`~/.password-store`): one GPG-encrypted file per entry, `NAME.gpg`, in folders. Each file is
/// decrypted by the user's own `gpg` (its agent asks for the key's passphrase, as `pass show` does), never by us.
///
/// Each entry becomes an item of the collection "Password Store": labelled by its name (`email/work`, the path
/// without `.gpg`), with the attribute `pass-entry` set to that name (so `secret-tool lookup pass-entry email/work`
/// finds it), the whole decrypted file as its secret (the password on the first line and whatever follows, as
/// `pass show` prints it), and the file's modification time as both its dates (the store keeps no other).
package enum PassStore {
    /// The label of the collection the entries go to.
    package static let collectionLabel = "Password Store"
    /// The attribute that names the entry.
    package static let entryAttribute = "pass-entry"
    /// The most entries read from one store.
    static let maximumEntries = 100_000
    /// The longest decrypted entry read (the keychain's bound on an imported secret).
    static let maximumSecret = SecretServiceImportItem.maximumSecretLength

    /// Whether `path` is a `pass` store (a folder with `.gpg-id`).
    package static func isStore(_ path: String) -> Bool {
        var info = stat()
        return lstat(path + "/.gpg-id", &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The entries of the store at `root`: their names, relative paths and modification times, sorted by name.
    /// Links are not followed (one pointing out of the store is reported, not read); `.git` and dot files are left.
    package static func entries(in root: String) throws(KeychainError) -> (entries: [(name: String, modified: Date)], skipped: [String]) {
        var found: [(name: String, modified: Date)] = []
        var skipped: [String] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let folder = relative.isEmpty ? root : root + "/" + relative
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: folder)
            } catch {
                throw KeychainError(code: .io, message: "The pass store folder \(folder) cannot be read: \(error.localizedDescription)")
            }
            for name in names.sorted() where !name.hasPrefix(".") {
                let path = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(root + "/" + path, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    pending.append(path)
                case S_IFREG where name.hasSuffix(".gpg"):
                    guard found.count < maximumEntries else {
                        throw KeychainError(code: .invalidParameter, message: "The pass store \(root) has more than \(maximumEntries) entries; import its folders one at a time.")
                    }
                    found.append((String(path.dropLast(4)), Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))))
                case S_IFLNK:
                    skipped.append("\(path): a link, not followed")
                default:
                    continue
                }
            }
        }
        return (found.sorted { $0.name < $1.name }, skipped)
    }

    /// Reads every entry of the store at `root` with `gpg` (found on `PATH` unless given), calling `progress` after
    /// each (entries done, entries in all).
    ///
    /// An entry `gpg` cannot decrypt (no key for it, a cancelled passphrase) is named in ``ImportedCollection/notImported``
    /// with gpg's reason; when it cannot decrypt any, the error says why.
    package static func read(
        _ root: String, gpg: String = "gpg", environment: [String: String] = ProcessInfo.processInfo.environment,
        progress: (Int, Int) -> Void = { _, _ in }
    ) throws(KeychainError) -> ImportedCollection {
        guard isStore(root) else {
            throw KeychainError(code: .invalidParameter, message: "\(root) is not a pass store (it has no .gpg-id). Give the store's folder, ~/.password-store by default.")
        }
        let (entries, skipped) = try entries(in: root)
        var collection = ImportedCollection(label: collectionLabel, notImported: skipped)
        var firstFailure: String?
        for (index, entry) in entries.enumerated() {
            switch decrypt(root + "/" + entry.name + ".gpg", gpg: gpg, environment: environment) {
            case .success(let secret):
                collection.items.append(
                    SecretServiceImportItem(
                        label: entry.name, attributes: [entryAttribute: entry.name], secret: secret, contentType: "text/plain",
                        dates: ItemDates(created: entry.modified, modified: entry.modified)))
            case .failure(let failure):
                firstFailure = firstFailure ?? failure.reason
                collection.notImported.append("\(entry.name): gpg could not decrypt it (\(failure.reason))")
            }
            progress(index + 1, entries.count)
        }
        if collection.items.isEmpty, let firstFailure {
            throw KeychainError(
                code: .authenticationFailed,
                message:
                    "gpg could not decrypt any entry of the pass store \(root): \(firstFailure)\nCheck that `pass show` works here (the secret key in this GnuPG home, its agent able to ask the passphrase)."
            )
        }
        return collection
    }

    /// One entry's plain text, or gpg's reason (the last line it wrote on standard error).
    static func decrypt(_ file: String, gpg: String, environment: [String: String]) -> Result<Data, GPGFailure> {
        let process = Process()
        if gpg.contains("/") {
            process.executableURL = URL(fileURLWithPath: gpg)
            process.arguments = ["--batch", "--quiet", "--yes", "--decrypt", "--", file]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [gpg, "--batch", "--quiet", "--yes", "--decrypt", "--", file]
        }
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return .failure(GPGFailure(reason: "\(gpg) could not be started: \(error.localizedDescription); install GnuPG (Debian: gpg)"))
        }
        // Both pipes drained at once: gpg may fill one while we wait on the other.
        let reasonBox = ReasonBox()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            reasonBox.bytes = (try? errors.fileHandleForReading.readToEnd()) ?? Data()
            group.leave()
        }
        var secret = Data()
        var tooLong = false
        while let chunk = try? output.fileHandleForReading.read(upToCount: 65_536), !chunk.isEmpty {
            if secret.count + chunk.count > maximumSecret { tooLong = true } else { secret.append(chunk) }
        }
        group.wait()
        process.waitUntilExit()
        if tooLong { return .failure(GPGFailure(reason: "the entry is longer than \(maximumSecret) bytes")) }
        guard process.terminationStatus == 0 else {
            let text = String(decoding: reasonBox.bytes.prefix(4_096), as: UTF8.self)
            let last = text.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            return .failure(GPGFailure(reason: last.hasPrefix("gpg: ") ? String(last.dropFirst(5)) : last))
        }
        return .success(secret)
    }

    /// Why gpg gave no plain text.
    struct GPGFailure: Error {
        var reason: String
    }

    private final class ReasonBox: @unchecked Sendable {
        var bytes = Data()
    }
}
