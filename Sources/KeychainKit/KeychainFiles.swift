import Foundation
import KeychainCore

/// Reading and writing the files that hold keychain material (backups, exported keys) the way the keychain
/// treats its own: never through a symbolic link, and written whole or not at all, readable by the owner only.
public enum KeychainFiles {
    /// The contents of the file at `path`, opened without following a symbolic link; nil when there is no file.
    ///
    /// - Throws: ``KeychainError`` with ``KeychainError/Code/io`` when the file cannot be read (a link, a folder,
    ///   no permission).
    public static func read(_ path: String) throws(KeychainError) -> Data? {
        try FileSystem.read(path)
    }

    /// Writes `data` to `path` atomically (a temporary file renamed into place) with mode 0600, replacing a file
    /// that is there.
    ///
    /// - Throws: ``KeychainError`` with ``KeychainError/Code/io`` when the folder cannot be written.
    public static func write(_ data: some Collection<UInt8>, to path: String) throws(KeychainError) {
        _ = try FileSystem.writeAtomically(Array(data), to: path, exclusive: false)
    }
}
