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

    package init(pid: Int32, uid: UInt32, program: Program, executableSHA256: String) {
        self.pid = pid
        self.uid = uid
        self.program = program
        self.executableSHA256 = executableSHA256
    }

    /// The access group an unregistered program gets, and nothing else: its Flatpak app ID, `snap.NAME`, or
    /// its executable's path.
    package var privateGroup: String {
        switch program {
        case .flatpak(let id): id
        case .snap(let name): "snap.\(name)"
        case .executable(let path): path
        }
    }

    package var description: String {
        switch program {
        case .flatpak(let id): "flatpak \(id) (pid \(pid))"
        case .snap(let name): "snap \(name) (pid \(pid))"
        case .executable(let path): "\(path) (pid \(pid), sha256 \(executableSHA256.prefix(12)))"
        }
    }
}

/// Reads a peer's identity from `/proc`, hashing each executable file once (by device, inode, size and
/// change time).
package final class PeerInspector: Sendable {
    private let digests = Mutex<[FileStamp: String]>([:])
    private let proc: String

    /// - Parameter proc: where procfs is mounted (tests may point elsewhere).
    package init(proc: String = "/proc") {
        self.proc = proc
    }

    /// The identity of process `pid` running as `uid`.
    package func identity(pid: Int32, uid: UInt32) throws(KeychainError) -> PeerIdentity {
        let base = "\(proc)/\(pid)"
        let digest = try executableDigest("\(base)/exe")
        if let app = flatpakAppID(base) {
            return PeerIdentity(pid: pid, uid: uid, program: .flatpak(app), executableSHA256: digest)
        }
        if let snap = snapName(base) {
            return PeerIdentity(pid: pid, uid: uid, program: .snap(snap), executableSHA256: digest)
        }
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(base)/exe"), path.hasPrefix("/") else {
            throw KeychainError(code: .missingEntitlement, message: "keychaind cannot tell which program process \(pid) runs (/proc/\(pid)/exe is unreadable), so it refuses it.")
        }
        return PeerIdentity(pid: pid, uid: uid, program: .executable(path), executableSHA256: digest)
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

    /// `[Application] name=` of the sandbox's `.flatpak-info`, read through the process's root.
    func flatpakAppID(_ base: String) -> String? {
        guard let data = try? FileSystem.read("\(base)/root/.flatpak-info"), let text = String(data: data, encoding: .utf8) else {
            return nil
        }
        var inApplication = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                inApplication = line == "[Application]"
            } else if inApplication, line.hasPrefix("name=") {
                let id = String(line.dropFirst(5))
                return id.isEmpty ? nil : id
            }
        }
        return nil
    }

    /// The snap's name from the AppArmor label `snap.NAME.APP (enforce)`, else from a `snap.NAME.…` cgroup.
    func snapName(_ base: String) -> String? {
        func name(fromLabel label: Substring) -> String? {
            let parts = label.split(separator: ".")
            guard parts.count >= 3, parts[0] == "snap", !parts[1].isEmpty else { return nil }
            return String(parts[1])
        }
        if let data = try? FileSystem.read("\(base)/attr/current"), let text = String(data: data, encoding: .utf8),
           let label = text.split(separator: " ").first, let snap = name(fromLabel: label) {
            return snap
        }
        if let data = try? FileSystem.read("\(base)/cgroup"), let text = String(data: data, encoding: .utf8) {
            for component in text.split(whereSeparator: { $0 == "/" || $0.isNewline }) where component.hasPrefix("snap.") {
                if let snap = name(fromLabel: component) { return snap }
            }
        }
        return nil
    }
}
