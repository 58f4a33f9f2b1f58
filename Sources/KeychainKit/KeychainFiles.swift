import Foundation
import KeychainCore

/// Reading and writing the files that hold keychain material (backups, exported keys and certificates): written
/// whole or not at all, readable by the owner only, and never through a symbolic link planted at the destination.
package enum KeychainFiles {
    /// The contents of the file at `path` (an input a person named, such as a certificate under `/etc/ssl/certs`,
    /// which may be a symbolic link); nil when there is no file.
    ///
    /// - Throws: `KeychainError` with `KeychainError/Code/io` when the file cannot be read (a folder, no
    ///   permission).
    package static func read(_ path: String) throws(KeychainError) -> Data? {
        try FileSystem.read(path, followingLinks: true)
    }

    /// Writes `data` to `path` atomically (a temporary file renamed into place) with mode 0600, replacing what is
    /// there: a symbolic link at `path` is replaced, never written through.
    ///
    /// - Throws: `KeychainError` with `KeychainError/Code/io` when the folder cannot be written.
    package static func write(_ data: some Collection<UInt8>, to path: String) throws(KeychainError) {
        _ = try FileSystem.writeAtomically(Array(data), to: path, exclusive: false)
    }
}
