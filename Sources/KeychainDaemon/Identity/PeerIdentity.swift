import Crypto
import KeychainCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Who is on the other end of a keychaind connection, as the kernel tells it: the peer's uid and pid from
/// `SO_PEERCRED`, and what `/proc` says about that pid. Nothing here comes from the client.
package struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// What kind of program the peer is.
    package enum Program: Sendable, Hashable {
        /// A Flatpak app, by its application ID (from `/proc/PID/root/.flatpak-info`).
        case flatpak(String)
        /// A Snap, by its snap name (from the AppArmor label `snap.NAME.APP`).
        case snap(String)
        /// A program of the host, by the path of its executable (`/proc/PID/exe`).
        case executable(String)
    }

    package var pid: Int32
    package var uid: UInt32
    package var program: Program
    /// Hex SHA-256 of the executable file the process runs (empty when it could not be read).
    package var executableSHA256: String
    /// Why the process may be running code that is not its program's (started with loader variables, traced, its
    /// executable deleted or writable by others), or nil. Such a process gets no registered or admin identity, and
    /// a private group apart from the program's own (``privateGroup``).
    package var untrusted: String?

    package init(pid: Int32, uid: UInt32, program: Program, executableSHA256: String, untrusted: String? = nil) {
        self.pid = pid
        self.uid = uid
        self.program = program
        self.executableSHA256 = executableSHA256
        self.untrusted = untrusted
    }

    /// The access group an unregistered program gets, and nothing else: its Flatpak app ID, `snap.NAME`, or
    /// its executable's path; for an untrusted process, that name after `untrusted:`, so that code injected into a
    /// program never reaches the program's own items.
    package var privateGroup: String {
        let name =
            switch program {
            case .flatpak(let id): id
            case .snap(let name): "snap.\(name)"
            case .executable(let path): path
            }
        return untrusted == nil ? name : "untrusted:" + name
    }

    /// What proofs of presence are bound to: the program (path and executable hash, Flatpak app ID or snap
    /// name), not the process, so a proof is never shared with another program.
    package var presenceKey: String {
        switch program {
        case .flatpak(let id): "flatpak:\(id)"
        case .snap(let name): "snap:\(name)"
        case .executable(let path): "exe:\(path)#\(executableSHA256)"
        }
    }

    package var description: String {
        let suffix = untrusted.map { "; untrusted: \($0)" } ?? ""
        return switch program {
        case .flatpak(let id): "flatpak \(id) (pid \(pid)\(suffix))"
        case .snap(let name): "snap \(name) (pid \(pid)\(suffix))"
        case .executable(let path): "\(path) (pid \(pid), sha256 \(executableSHA256.prefix(12))\(suffix))"
        }
    }
}

/// The file a process executes, as `/proc/PID/exe` names it and `stat` identifies it.
struct ExecutableFile: Equatable {
    var path: String
    var device: UInt64
    var inode: UInt64
    /// The user the file belongs to.
    var owner: uid_t
    /// Why the file cannot vouch for the process, or nil.
    var untrusted: String?
}

/// Reads a peer's identity from `/proc`, hashing each executable file once (by device, inode, size and
/// change time).
package final class PeerInspector: Sendable {
    private let digests = Mutex<[FileStamp: String]>([:])
    /// What the processes run code from, judged against what their programs link.
    private let mappedCode = MappedCode()
    private let proc: String
    private let host: HostNamespaces
    private let runtimeRoot: String
    /// The host's `/etc/ld.so.preload` (nil: none), compared with a sandbox's.
    private let hostPreload: Data?

    /// - Parameters:
    ///   - proc: where procfs is mounted (tests may point elsewhere).
    ///   - runtimeRoot: where the users' runtime folders are (`/run/user`), for Flatpak's instance records.
    package init(proc: String = "/proc", runtimeRoot: String = "/run/user") {
        self.proc = proc
        self.runtimeRoot = runtimeRoot
        host = HostNamespaces.current()
        hostPreload = try? FileSystem.read("/etc/ld.so.preload", followingLinks: true)
    }

    /// The identity of process `pid` running as `uid`. A process that cannot be trusted to run only its program's
    /// code is marked ``PeerIdentity/untrusted``: one started with the dynamic loader told to load other code
    /// (`LD_PRELOAD`, `LD_LIBRARY_PATH`, `LD_AUDIT`), one being traced, one whose executable was deleted or can be
    /// changed by someone else, one in namespaces of its own that is no verified sandbox
    /// (``sandbox(_:pid:uid:executable:)``), one running code from a file its program does not link (``MappedCode``).
    /// A process whose state cannot be read, or that started another program while it was being identified, is
    /// refused.
    package func identity(pid: Int32, uid: UInt32) throws(KeychainError) -> PeerIdentity {
        let base = "\(proc)/\(pid)"
        let before = try executable(base, pid: pid, uid: uid)
        let loader = try loaderVariable(base, pid: pid)
        var untrusted = before.untrusted ?? loader.map { "started with \($0) set" }
        switch tracer(of: pid) {
        case .some(0): break
        case .some(let tracer): untrusted = untrusted ?? "being traced by process \(tracer)"
        case .none: throw refusal(pid, "keychaind cannot read /proc/\(pid)/status")
        }
        let digest = try executableDigest("\(base)/exe")
        let (program, sandboxUntrusted, onHost) = try sandbox(base, pid: pid, uid: uid, executable: before.path)
        untrusted = untrusted ?? sandboxUntrusted
        // What a process on the host maps names the host's files. A verified sandbox's paths name its own (a
        // Flatpak runtime's /usr), which keychaind does not judge: the sandbox is its app ID, proved otherwise.
        if untrusted == nil, onHost {
            untrusted = try mappedCode.foreignCode(processFolder: base, pid: pid, executable: before)
        }
        // The same executable file before and after: the process did not start another program meanwhile.
        guard try executable(base, pid: pid, uid: uid) == before else {
            throw refusal(pid, "it started another program while keychaind identified it")
        }
        return PeerIdentity(pid: pid, uid: uid, program: program, executableSHA256: digest, untrusted: untrusted)
    }

    /// Which process traces `pid` (0: none), from `TracerPid` in `/proc/PID/status`; nil when it cannot be read.
    package func tracer(of pid: Int32) -> Int32? {
        let fd = openStatus(of: pid)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return tracer(status: fd)
    }

    /// The line ``tracer(status:)`` looks for, made once.
    private static let tracerKey = Array("\nTracerPid:".utf8)

    /// Opens `/proc/PID/status` for ``tracer(status:)`` (-1 when it cannot be opened). The open file stays with the
    /// process that had the pid when it was opened: once that process is gone, reading fails, even when another
    /// process has the pid by then. So keychaind opens it once per connection, while it knows the process runs (its
    /// pidfd), and asks it again at every receive without looking the path up again.
    package func openStatus(of pid: Int32) -> Int32 {
        open("\(proc)/\(pid)/status", O_RDONLY | O_CLOEXEC)
    }

    /// Which process traces the process whose `status` file `fd` is (0: none), read now: the kernel writes the file
    /// anew for every read from its start, so a tracer that attached since the last read shows. nil when it cannot
    /// be read (the process is gone). keychaind asks on every receive, so this reads the file's head into the stack
    /// with one `pread` and parses the bytes.
    package func tracer(status fd: Int32) -> Int32? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> Int32? in
            guard let base = buffer.baseAddress else { return nil }
            var filled = 0
            while filled < buffer.count {
                let n = pread(fd, base + filled, buffer.count - filled, off_t(filled))
                if n < 0, errno == EINTR { continue }
                if n <= 0 { break }
                filled += n
            }
            let key = PeerInspector.tracerKey
            var index = 0
            while index + key.count <= filled {
                if buffer[index] == key[0], (1..<key.count).allSatisfy({ buffer[index + $0] == key[$0] }) {
                    var cursor = index + key.count
                    while cursor < filled, buffer[cursor] == 0x20 || buffer[cursor] == 0x09 { cursor += 1 }
                    var value: Int32 = 0
                    var digits = 0
                    while cursor < filled, buffer[cursor] >= 0x30, buffer[cursor] <= 0x39, digits < 10 {
                        value = value &* 10 &+ Int32(buffer[cursor] - 0x30)
                        cursor += 1
                        digits += 1
                    }
                    return digits > 0 ? value : nil
                }
                index += 1
            }
            return nil
        }
    }

    /// The executable a process runs (its path and file identity), marked untrusted when it was deleted since the
    /// process started, or when another user than root and the process's own can change it.
    func executable(_ base: String, pid: Int32, uid: UInt32) throws(KeychainError) -> ExecutableFile {
        guard var path = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(base)/exe"), path.hasPrefix("/") else {
            throw refusal(pid, "/proc/\(pid)/exe is unreadable")
        }
        var info = stat()
        guard stat("\(base)/exe", &info) == 0 else { throw refusal(pid, "its executable cannot be examined (\(String(cString: strerror(errno))))") }
        var untrusted: String?
        if path.hasSuffix(" (deleted)") {
            path.removeLast(" (deleted)".count)
            untrusted = "its executable \(path) was deleted or replaced since it started"
        } else if info.st_mode & 0o022 != 0 {
            untrusted = "its executable \(path) is writable by others (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        } else if info.st_uid != 0, info.st_uid != uid {
            untrusted = "its executable \(path) belongs to user \(info.st_uid), who could change it"
        }
        return ExecutableFile(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), owner: info.st_uid, untrusted: untrusted)
    }

    /// The loader variable (`LD_PRELOAD`, …) the process was started with, from the environment it started with.
    func loaderVariable(_ base: String, pid: Int32) throws(KeychainError) -> String? {
        // The system keychaind may not open another user's environ; it reads the same bytes from memory instead.
        guard let environment = (try? FileSystem.read("\(base)/environ")) ?? InitialEnvironment.read(base: base, pid: pid) else {
            throw refusal(pid, "keychaind cannot read /proc/\(pid)/environ")
        }
        for entry in environment.split(separator: 0) {
            for variable in Self.loaderVariables where entry.count > variable.count && entry.starts(with: variable) {
                return String(decoding: variable.dropLast(), as: UTF8.self)
            }
        }
        return nil
    }

    /// Variables that make the dynamic loader run code the program did not ask for (`NAME=` with a value).
    static let loaderVariables: [[UInt8]] = ["LD_PRELOAD=", "LD_LIBRARY_PATH=", "LD_AUDIT="].map { Array($0.utf8) }

    func refusal(_ pid: Int32, _ reason: String) -> KeychainError {
        KeychainError(code: .missingEntitlement, message: "keychaind refuses process \(pid): \(reason).")
    }

    /// The hex SHA-256 of a file, cached by identity of the file's contents.
    package func executableDigest(_ path: String) throws(KeychainError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw KeychainError(code: .missingEntitlement, message: "Cannot read the program \(path) to identify it (\(String(cString: strerror(errno)))).")
        }
        defer { close(fd) }
        guard let key = FileStamp(descriptor: fd) else { throw FileSystem.ioError("stat", path) }
        if let known = digests.withLock({ $0[key] }) { return known }
        let hex = try FileDigest.sha256Hex(of: fd, path: path)
        digests.withLock { cache in
            if cache.count > 4096 { cache.removeAll() }
            cache[key] = hex
        }
        return hex
    }

    /// What program a process is, judged by the namespaces it runs in, and why it is untrusted if it is.
    ///
    /// In the host's user and mount namespaces (``HostNamespaces``) a process is its executable's path (or a snap,
    /// by its AppArmor label), and a `.flatpak-info` proves nothing. In namespaces of its own the path names
    /// whatever its creator mounted there (a bind mount of another binary, an overlay on `/etc` with an
    /// `ld.so.preload`): it is a verified Flatpak app (``FlatpakSandbox``), a snap by its AppArmor label in the
    /// host's user namespace, or untrusted. A sandbox whose `/etc/ld.so.preload` is not the host's is untrusted too.
    ///
    /// - Returns: the program, why it is untrusted (nil: it is not), and whether it runs in the host's namespaces.
    func sandbox(_ base: String, pid: Int32, uid: UInt32, executable path: String) throws(KeychainError) -> (PeerIdentity.Program, String?, onHost: Bool) {
        guard let namespaces = ProcessNamespaces(processFolder: base) else {
            throw refusal(pid, "keychaind cannot examine the namespaces in /proc/\(pid)/ns")
        }
        let snap = ProgramName.snapName(processFolder: base)
        if host.isHost(namespaces) {
            return (snap.map { .snap($0) } ?? .executable(path), nil, true)
        }
        let program: PeerIdentity.Program
        switch FlatpakSandbox.verify(processFolder: base, uid: uid, namespaces: namespaces, host: host, runtimeRoot: runtimeRoot, proc: proc) {
        case .success(let sandbox):
            program = .flatpak(sandbox.appID)
        case .failure(.forged(let reason)):
            return (.executable(path), "it shows a Flatpak sandbox keychaind cannot verify: \(reason)", false)
        case .failure(.notFlatpak):
            guard let snap, host.user.contains(namespaces.user) else {
                return (
                    .executable(path),
                    "it runs in a user or mount namespace of its own, where the path \(path) and its libraries "
                        + "may be anything its creator mounted, and it is no verified Flatpak app or snap", false
                )
            }
            program = .snap(snap)
        }
        // A link or anything unreadable there counts as different: the loader would follow it.
        let preload: Data?
        do { preload = try FileSystem.read("\(base)/root/etc/ld.so.preload", followingLinks: false) } catch {
            return (program, "its /etc/ld.so.preload cannot be read as a plain file, so it may load code that is not its program's", false)
        }
        guard preload == hostPreload else {
            return (program, "its /etc/ld.so.preload differs from the host's, so it may load code that is not its program's", false)
        }
        return (program, nil, false)
    }
}
