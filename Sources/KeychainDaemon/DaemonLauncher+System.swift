import Foundation
import KeychainCore
import KeychainProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Whose keychains a keychaind serves.
package enum DaemonMode: Sendable, Hashable {
    /// The keychain its environment names (`KEYCHAIN_HOME`), to the processes of the user it runs as: for machines
    /// where no one can install a system service. The user's own processes can read its files.
    case user
    /// `keychaind --system`, as Apple's securityd: run as a system user (`keychain`), it serves each local user their
    /// own keychain in `stateDirectory/UID/` on one socket every user may connect to (`/run/keychain/keychaind.sock`),
    /// the user being the kernel's uid of the connecting process. The folders belong to the system user (0700), so a
    /// user's processes can neither read the files nor attach to the daemon. At most `maximumUsers` keychains are
    /// open at once.
    case system(stateDirectory: String, maximumUsers: Int)

    /// The system keychaind's default state folder: systemd's `$STATE_DIRECTORY` (`StateDirectory=keychain`), else
    /// `/var/lib/keychain`.
    package static func defaultStateDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        // systemd may list several folders, separated by colons; the first is this unit's.
        if let given = environment["STATE_DIRECTORY"]?.split(separator: ":").first, given.hasPrefix("/") {
            return String(given)
        }
        return "/var/lib/keychain"
    }
}

extension DaemonLauncher {
    /// The system keychaind's start: claims the state folder (one keychaind per folder) and returns its socket and
    /// the claim's descriptor.
    ///
    /// The state folder must belong to keychaind's user; it is made 0700 (and created when its parent allows). The
    /// socket is the one systemd passed, else `socket` (default `/run/keychain/keychaind.sock`) bound here in a
    /// folder of keychaind's user or root that no one else may write, and opened to every user (0666): which
    /// keychain a connection reaches is decided by its uid, not by who may connect.
    func claimSystem(stateDirectory: String) throws -> (Listener, Int32) {
        if geteuid() == 0 {
            logger.warning("keychaind --system runs as root; run it as the keychain system user (keychaind-system.service does)")
        }
        guard stateDirectory.hasPrefix("/") else {
            throw StartFailure("The state folder \(stateDirectory) is not an absolute path; pass --state-directory /ABSOLUTE/PATH.")
        }
        if mkdir(stateDirectory, 0o700) != 0, errno != EEXIST {
            throw StartFailure(
                "keychaind cannot create its state folder \(stateDirectory) (\(String(cString: strerror(errno)))). Create it, owned by keychaind's user with mode 0700 (systemd-tmpfiles does), or pass --state-directory."
            )
        }
        do {
            try ServedKeychains.checkOwnFolder(stateDirectory)
        } catch {
            throw StartFailure(error.message)
        }
        // One system keychaind per state folder.
        let lockPath = stateDirectory + "/keychaind.lock"
        let guardFD = open(lockPath, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard guardFD >= 0 else { throw StartFailure("Cannot open \(lockPath): \(String(cString: strerror(errno))).") }
        guard flock(guardFD, LOCK_EX | LOCK_NB) == 0 else {
            close(guardFD)
            throw StartFailure("Another keychaind already serves \(stateDirectory).")
        }
        do {
            return (try systemListener(), guardFD)
        } catch {
            close(guardFD)
            throw error
        }
    }

    /// The system keychaind's listening socket (see ``claimSystem(stateDirectory:)``).
    func systemListener() throws -> Listener {
        let path = socket ?? DaemonSocket.systemPath
        if Self.takeActivationSocket(), let sockets = Self.activationSockets { return .inherited(sockets.main, path: path) }
        let folder = NSString(string: path).deletingLastPathComponent
        if mkdir(folder, 0o755) != 0, errno != EEXIST {
            throw StartFailure(
                "keychaind cannot create the socket's folder \(folder) (\(String(cString: strerror(errno)))). Create it, owned by keychaind's user with mode 0755 (systemd-tmpfiles does), or pass --socket."
            )
        }
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw StartFailure("The socket's folder \(folder) is not a folder; remove it or pass another --socket.")
        }
        guard info.st_uid == geteuid() || info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            throw StartFailure(
                "The socket's folder \(folder) may be changed by another user (owner \(info.st_uid), mode \(String(info.st_mode & 0o7777, radix: 8))): another user could put a socket of its own there. Make it belong to keychaind's user with mode 0755."
            )
        }
        if DaemonSocket.accepts(path) {
            throw StartFailure("Another keychaind already serves \(path). Stop it first (systemctl stop keychaind-system).")
        }
        let fd = try DaemonServer.listen(.path(path))
        // Every local user may connect; keychaind serves each the keychain of the uid the kernel gives.
        guard chmod(path, 0o666) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(path)
            throw StartFailure("Cannot open \(path) to every user (chmod: \(reason)).")
        }
        return .inherited(fd, path: path)
    }
}
