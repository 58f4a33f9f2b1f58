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
    /// Makes sure `path` is a folder only this user can use: creates it (and missing parents) with mode 0700, or
    /// checks the existing one. A folder that is a symbolic link, belongs to another user, or that others may write
    /// to is refused (someone else could have put files in it, or could read what goes in it); one others may only
    /// read is closed to them (mode 0700), unless `tightening` is false: then an existing folder's mode is left as it
    /// is (keychaind's socket folder, which may hold other programs' files: a socket is made 0600 itself). The checks
    /// are made on the opened folder, never through a link.
    package static func ensurePrivateDirectory(_ path: String, tightening: Bool = true) throws(KeychainError) {
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else {
                if let obstacle = obstacle(to: path) { throw obstacle.error(path) }
                throw ioError("examine", path)
            }
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                if let obstacle = obstacle(to: path, creating: true) { throw obstacle.error(path, creating: true) }
                throw KeychainError(
                    code: .io, message: "Cannot create the folder \(path): \(error.localizedDescription). Check its parent's permissions or set KEYCHAIN_HOME to a writable folder.", cause: nil)
            }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw KeychainError(code: .io, message: "\(path) is a symbolic link; the keychain does not follow links to its folders. Remove the link, or set KEYCHAIN_HOME to a folder of your own.")
            }
            if errno == ENOTDIR {
                throw KeychainError(code: .io, message: "\(path) exists and is not a folder. Set KEYCHAIN_HOME to a folder.")
            }
            if let obstacle = obstacle(to: path) { throw obstacle.error(path) }
            throw ioError("open the folder", path)
        }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw ioError("examine", path) }
        let me = geteuid()
        guard info.st_uid == me else {
            throw KeychainError(
                code: .io,
                message:
                    "\(path) belongs to user \(info.st_uid), not to you (user \(me)): that user could read or replace your keychain. Remove it, or set KEYCHAIN_HOME (or --socket) to a folder of your own."
            )
        }
        guard info.st_mode & 0o022 == 0 else {
            throw KeychainError(
                code: .io,
                message:
                    "\(path) can be written by others (mode \(String(info.st_mode & 0o7777, radix: 8))): someone else may have put files in it. Remove it and let the keychain create it again, or set KEYCHAIN_HOME (or --socket) to a folder of your own."
            )
        }
        if tightening, info.st_mode & 0o077 != 0, fchmod(fd, 0o700) != 0 { throw ioError("close to other users", path) }
    }

    /// Opens (creating, mode 0600) a regular file of this user's that no one else can have planted: never through a
    /// symbolic link, and refused when it has other names (hard links) or another owner. Returns the descriptor.
    package static func openOwnFile(_ path: String, flags: Int32) throws(KeychainError) -> Int32 {
        let fd = open(path, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw KeychainError(code: .io, message: "\(path) is a symbolic link; the keychain never writes through one. Remove it.")
            }
            throw ioError("open", path)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1, info.st_uid == geteuid() else {
            close(fd)
            throw KeychainError(code: .io, message: "\(path) is not a file of your own with one name (it may be a link planted there). Remove it.")
        }
        return fd
    }

    /// Reads a whole file, or returns nil when it does not exist.
    ///
    /// - Parameter followingLinks: whether a symbolic link at `path` is followed. The keychain's own files are
    ///   read with `O_NOFOLLOW` (false, the default): a link there fails with ``KeychainError/Code/io``, so a
    ///   planted link can neither feed the keychain someone else's key or keybag nor point it elsewhere. Files a
    ///   person names (a certificate, an entitlements plist) may be links (true).
    package static func read(_ path: String, followingLinks: Bool = false) throws(KeychainError) -> Data? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW))
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ioError("read", path)
        }
        defer { close(fd) }
        guard let result = readAll(fd) else { throw ioError("read", path) }
        return result
    }

    /// Everything left to read from `fd`, to its end; nil when a read fails, or when there is more than `limit`
    /// bytes (a file a peer controls, such as one in its `/proc` folder or its sandbox, is read with a bound).
    package static func readAll(_ fd: Int32, limit: Int = .max) -> Data? {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { return result }
            guard n <= limit - result.count else { return nil }
            result.append(contentsOf: buffer[0..<n])
        }
    }

    /// Writes `bytes` to a new 0600 file beside `path` (created with `O_EXCL`), fsyncs it, and publishes it at
    /// `path`. Nothing is ever written through a link at `path`: `rename(2)` replaces the link itself, and
    /// `link(2)` fails on it.
    ///
    /// With `exclusive`, publication uses `link(2)` and fails with `false` if `path` already exists (so two
    /// processes creating the same file race safely); otherwise it uses `rename(2)` and replaces any old file.
    /// The folder is fsynced afterwards so the new name survives a crash.
    @discardableResult
    ///
    /// `mode` is the new file's permissions (0600 unless a file others must read, such as the administrator's
    /// trust settings at 0644).
    package static func writeAtomically(_ bytes: some Collection<UInt8>, to path: String, exclusive: Bool, mode: mode_t = 0o600) throws(KeychainError) -> Bool {
        let directory = NSStringPath(path).deletingLastPathComponent
        let temp = "\(path).tmp-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw ioError("create", temp) }
        if mode != 0o600 && fchmod(fd, mode) != 0 { close(fd); unlink(temp); throw ioError("set the permissions of", temp) }
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

    /// Creates `path` as an empty 0600 file if it does not exist (so SQLite's -wal/-shm inherit 0600): a new
    /// file with `O_EXCL`, an existing one opened as itself. A symbolic link at `path` is refused (`O_NOFOLLOW`),
    /// never followed.
    package static func createPrivateFile(_ path: String) throws(KeychainError) {
        var fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0, errno == EEXIST { fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
        if fd < 0 { throw ioError("create", path) }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// Runs `body` holding an exclusive `flock(2)` on `path` (created 0600), so that processes opening the
    /// same keychain for the first time create its files one at a time. A symbolic link at `path` is refused.
    package static func withExclusiveLock<T>(_ path: String, _ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw ioError("open", path) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw ioError("lock", path) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Refuses a symbolic link at any of `paths`: the keychain's files are opened only as themselves, never
    /// through a link planted in its folder. SQLite opens the database and its `-wal`, `-shm` and `-journal`
    /// following links, so they are checked before it opens them.
    package static func refuseSymbolicLinks(_ paths: [String]) throws(KeychainError) {
        for path in paths {
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK { throw linkError(path) }
        }
    }

    /// The error for a symbolic link where one of the keychain's files belongs.
    package static func linkError(_ path: String) -> KeychainError {
        KeychainError(
            code: .io,
            message:
                "\(path) is a symbolic link. The keychain never opens its files through a link, since someone could have planted it to make the keychain read or write elsewhere. Remove the link (check where it points first) and try again."
        )
    }

    package static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    /// What stands in the way of `path`, in a person's terms: a folder on the way that is a file, a folder this
    /// user may not enter (or, at `path` itself, open), or, when `creating`, the last existing folder, which this
    /// user may not write in. `nil` when nothing does (the failure is elsewhere: a full disk, a missing folder).
    package static func obstacle(to path: String, creating: Bool = false) -> Obstacle? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        var reached = path.hasPrefix("/") ? "/" : "."
        for (index, component) in components.enumerated() {
            let isLast = index == components.count - 1
            if !mayUse(reached, X_OK) { return Obstacle(kind: .mayNotEnter, folder: reached) }
            let next = reached == "/" ? "/" + component : reached + "/" + component
            var info = stat()
            guard stat(next, &info) == 0 else {
                if errno == ENOENT, creating, !mayUse(reached, W_OK | X_OK) {
                    return Obstacle(kind: .mayNotWrite, folder: reached)
                }
                return nil
            }
            if info.st_mode & S_IFMT != S_IFDIR { return Obstacle(kind: .notAFolder, folder: next) }
            if isLast, !mayUse(next, R_OK | X_OK) { return Obstacle(kind: .mayNotOpen, folder: next) }
            reached = next
        }
        return nil
    }

    /// Whether this process's effective user may use `path` as `mode` says (`access(2)` by the effective ids).
    private static func mayUse(_ path: String, _ mode: Int32) -> Bool {
        faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0 || errno != EACCES
    }

    /// A folder in the way of another, found by ``obstacle(to:creating:)``.
    package struct Obstacle: Sendable, Equatable {
        /// How the folder is in the way.
        package enum Kind: Sendable, Equatable {
            /// It is a file (or a device, a socket), not a folder.
            case notAFolder
            /// This user may not enter it (no search permission).
            case mayNotEnter
            /// This user may not list it (the folder itself, not readable).
            case mayNotOpen
            /// This user may not create anything in it.
            case mayNotWrite
        }
        /// How the folder is in the way.
        package var kind: Kind
        /// The folder (or file) in the way.
        package var folder: String

        /// The folder's owner and mode, as `, which belongs to user 0 (mode 700)`; empty when it cannot be read.
        var ownership: String {
            var info = stat()
            guard stat(folder, &info) == 0 else { return "" }
            return ", which belongs to user \(info.st_uid) (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }

        /// The error for `path`: the obstacle first, then what to do.
        package func error(_ path: String, creating: Bool = false) -> KeychainError {
            let me = geteuid()
            let what = creating ? "Cannot create the folder \(path)" : "Cannot use the folder \(path)"
            let message =
                switch kind {
                case .notAFolder:
                    "\(what): \(folder) is a file, not a folder. Move that file away, or set KEYCHAIN_HOME to a folder of your own."
                case .mayNotEnter:
                    "\(what): you (user \(me)) have no permission to enter \(folder)\(ownership). Run as the user whose keychain it is, or set KEYCHAIN_HOME to a folder of your own."
                case .mayNotOpen:
                    "\(what): you (user \(me)) have no permission to open it\(ownership). Run as the user whose keychain it is, or set KEYCHAIN_HOME to a folder of your own."
                case .mayNotWrite:
                    "\(what): you (user \(me)) have no permission to create folders in \(folder)\(ownership). Set KEYCHAIN_HOME to a folder you may write in."
                }
            return KeychainError(code: .io, message: message)
        }
    }

    package static func ioError(_ operation: String, _ path: String) -> KeychainError {
        let code = errno
        if code == ELOOP { return linkError(path) }
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
