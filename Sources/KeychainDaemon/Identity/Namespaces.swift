import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One kernel namespace, as `stat` of `/proc/PID/ns/KIND` identifies it (the nsfs device and inode).
struct NamespaceID: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    /// The namespace `path` (`/proc/PID/ns/user`, …) names, or nil when it cannot be examined.
    init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The user, mount and PID namespaces a process runs in.
struct ProcessNamespaces: Hashable, Sendable {
    var user: NamespaceID
    var mount: NamespaceID
    var pid: NamespaceID

    /// The namespaces of the process whose `/proc` folder is `base`, or nil when one cannot be examined.
    init?(processFolder base: String) {
        guard let user = NamespaceID("\(base)/ns/user"), let mount = NamespaceID("\(base)/ns/mnt"),
            let pid = NamespaceID("\(base)/ns/pid")
        else { return nil }
        self.user = user
        self.mount = mount
        self.pid = pid
    }
}

/// The namespaces of the host: those of init (when keychaind may examine it), of keychaind's parent when keychaind
/// started (the user's service manager, for a sandboxed unit whose own mount namespace is private) and of keychaind
/// itself. A client in one of these user namespaces and one of these mount namespaces sees the host's files: the
/// path of its executable and its `/etc/ld.so.preload` are the ones keychaind sees.
struct HostNamespaces: Sendable {
    var user: Set<NamespaceID>
    var mount: Set<NamespaceID>
    var pid: Set<NamespaceID>

    /// Read from `/proc` now.
    static func current() -> HostNamespaces {
        var host = HostNamespaces(user: [], mount: [], pid: [])
        for base in ["/proc/self", "/proc/1", "/proc/\(getppid())"] {
            if let user = NamespaceID("\(base)/ns/user") { host.user.insert(user) }
            if let mount = NamespaceID("\(base)/ns/mnt") { host.mount.insert(mount) }
            if let pid = NamespaceID("\(base)/ns/pid") { host.pid.insert(pid) }
        }
        return host
    }

    /// Whether a process in `namespaces` sees the host's files as the host's users do.
    func isHost(_ namespaces: ProcessNamespaces) -> Bool {
        user.contains(namespaces.user) && mount.contains(namespaces.mount)
    }
}

/// A Flatpak sandbox, verified as xdg-desktop-portal verifies one: its `.flatpak-info` is read through the process's
/// own root (`/proc/PID/root`), opened without following links, must be a regular file on a read-only mount (bwrap
/// puts it there; a folder made by hand and entered with `chroot` is writable), and must name an instance whose
/// bwrap child (`bwrapinfo.json` in the user's runtime folder) runs in the same PID and mount namespaces as the
/// process, a PID namespace of its own.
struct FlatpakSandbox: Sendable, Equatable {
    /// `[Application] name=`.
    var appID: String

    /// The largest `.flatpak-info` or `bwrapinfo.json` read.
    static let maximumFileSize = 64 * 1024

    /// Verifies the sandbox of the process whose `/proc` folder is `base`; the reason it is not one otherwise.
    static func verify(
        processFolder base: String, uid: UInt32, namespaces: ProcessNamespaces, host: HostNamespaces,
        runtimeRoot: String, proc: String
    ) -> Result<FlatpakSandbox, FlatpakRefusal> {
        let root = open("\(base)/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return .failure(.notFlatpak) }
        defer { close(root) }
        let fd = openat(root, ".flatpak-info", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return .failure(.notFlatpak) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumFileSize else {
            return .failure(.forged("its /.flatpak-info is not a regular file"))
        }
        var volume = statvfs()
        guard fstatvfs(fd, &volume) == 0, volume.f_flag & UInt(ST_RDONLY) != 0 else {
            return .failure(.forged("its /.flatpak-info is on a writable file system, not on the read-only mount Flatpak makes"))
        }
        guard let bytes = FileSystem.readAll(fd, limit: maximumFileSize), let fields = ProgramName.flatpakInfo(bytes), let app = fields.appID else {
            return .failure(.forged("its /.flatpak-info names no application"))
        }
        guard let instance = fields.instanceID, !instance.isEmpty, instance.utf8.count <= 64,
            instance.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else {
            return .failure(.forged("its /.flatpak-info names no Flatpak instance"))
        }
        guard !host.pid.contains(namespaces.pid) else {
            return .failure(.forged("it shares the host's PID namespace, which a Flatpak sandbox never does"))
        }
        let bwrapInfo = "\(runtimeRoot)/\(uid)/.flatpak/\(instance)/bwrapinfo.json"
        guard let data = try? FileSystem.read(bwrapInfo), data.count <= maximumFileSize,
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let child = (object["child-pid"] as? NSNumber)?.int32Value, child > 1
        else {
            return .failure(.forged("Flatpak instance \(instance) has no readable bwrapinfo.json in \(runtimeRoot)/\(uid)/.flatpak"))
        }
        guard let childNamespaces = ProcessNamespaces(processFolder: "\(proc)/\(child)"),
            childNamespaces.pid == namespaces.pid, childNamespaces.mount == namespaces.mount
        else {
            return .failure(.forged("it is not in the sandbox of Flatpak instance \(instance) (bwrap child \(child))"))
        }
        return .success(FlatpakSandbox(appID: app))
    }

    /// Why a process is no verified Flatpak app.
    enum FlatpakRefusal: Error, Equatable {
        /// It shows no `.flatpak-info` at all.
        case notFlatpak
        /// It shows one that fails a check; the reason says which.
        case forged(String)
    }
}
