import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small POSIX file helpers with the permissions and durability the keychain needs.
package enum FileSystem {
    /// Creates `path` (and missing parents) with mode 0700. An existing folder is left as it is (it may be
    /// shared, like `/tmp`); the keychain's own files are 0600 whatever the folder's mode.
    package static func ensurePrivateDirectory(_ path: String) throws(KeychainError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw KeychainError(code: .io, message: "\(path) exists and is not a folder. Set KEYCHAIN_HOME to a folder.")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw KeychainError(code: .io, message: "Cannot create the keychain folder \(path): \(error.localizedDescription). Check its parent's permissions or set KEYCHAIN_HOME to a writable folder.", cause: nil)
        }
        _ = chmod(path, 0o700) // exactly 0700, whatever the umask made of it
    }

    /// Reads a whole file, or returns nil when it does not exist.
    package static func read(_ path: String) throws(KeychainError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ioError("read", path)
        }
        defer { close(fd) }
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw ioError("read", path) }
            if n == 0 { break }
            result.append(contentsOf: buffer[0 ..< n])
        }
        return result
    }

    /// Writes `bytes` to a new 0600 file beside `path`, fsyncs it, and publishes it at `path`.
    ///
    /// With `exclusive`, publication uses `link(2)` and fails with `false` if `path` already exists (so two
    /// processes creating the same file race safely); otherwise it uses `rename(2)` and replaces any old file.
    /// The folder is fsynced afterwards so the new name survives a crash.
    @discardableResult
    package static func writeAtomically(_ bytes: some Collection<UInt8>, to path: String, exclusive: Bool) throws(KeychainError) -> Bool {
        let directory = NSStringPath(path).deletingLastPathComponent
        let temp = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 { throw ioError("create", temp) }
        var ok = false
        defer { if !ok || exclusive { unlink(temp) } }
        let data = Array(bytes)
        var written = 0
        while written < data.count {
            let n = data.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return write(fd, base + written, raw.count - written)
            }
            if n < 0 { if errno == EINTR { continue }; close(fd); throw ioError("write", temp) }
            written += n
        }
        if fsync(fd) != 0 { close(fd); throw ioError("fsync", temp) }
        close(fd)
        if exclusive {
            if link(temp, path) != 0 {
                if errno == EEXIST { ok = true; return false }
                throw ioError("link", path)
            }
        } else if rename(temp, path) != 0 {
            throw ioError("rename", path)
        }
        ok = true
        syncDirectory(directory)
        return true
    }

    /// Creates `path` as an empty 0600 file if it does not exist (so SQLite's -wal/-shm inherit 0600).
    package static func createPrivateFile(_ path: String) throws(KeychainError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { throw ioError("create", path) }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// Runs `body` holding an exclusive `flock(2)` on `path` (created 0600), so that processes opening the
    /// same keychain for the first time create its files one at a time.
    package static func withExclusiveLock<T>(_ path: String, _ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { throw ioError("open", path) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw ioError("lock", path) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    package static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    package static func ioError(_ operation: String, _ path: String) -> KeychainError {
        let code = errno
        let reason = String(cString: strerror(code))
        return KeychainError(code: .io, message: "Cannot \(operation) \(path): \(reason). Check that KEYCHAIN_HOME is writable by you and the disk is not full.")
    }
}

/// `read(2)`, named apart from `FileSystem.read(_:)`.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// Path arithmetic without Foundation's NSString bridging.
package struct NSStringPath: ExpressibleByStringLiteral {
    let path: String
    package init(stringLiteral value: String) { path = value }
    package init(_ path: String) { self.path = path }
    package var deletingLastPathComponent: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
    package var lastPathComponent: String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// What identifies a version of a file without reading it: device, inode, size, and modification and change times.
/// A file replaced by an atomic rename, rewritten in place, or given new metadata gets another stamp; reading it
/// again is needed only then.
package struct FileStamp: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int, modifiedNanoseconds: Int
    var changed: Int, changedNanoseconds: Int

    /// The stamp of the file at `path` (links followed), or nil when it cannot be looked at (`errno` says why).
    package init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        self.init(st)
    }

    /// The stamp of the open file `fd`, or nil when `fstat` fails (`errno` says why).
    package init?(descriptor fd: Int32) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        self.init(st)
    }

    private init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = Int(st.st_mtim.tv_sec)
        modifiedNanoseconds = Int(st.st_mtim.tv_nsec)
        changed = Int(st.st_ctim.tv_sec)
        changedNanoseconds = Int(st.st_ctim.tv_nsec)
    }
}
