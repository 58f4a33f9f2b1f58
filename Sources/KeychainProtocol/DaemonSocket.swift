import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// keychaind's Unix-domain socket, as both sides find it.
package enum DaemonSocket {
    /// The folder of the system keychaind's socket (`keychaind --system`).
    package static let systemFolder = "/run/keychain"
    /// The system user the system keychaind runs as.
    package static let systemUser = "keychain"

    /// The default socket: `$XDG_RUNTIME_DIR/keychain/keychaind.sock`; nil without an absolute `XDG_RUNTIME_DIR`.
    package static func defaultPath(_ environment: [String: String]) -> String? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime + "/keychain/keychaind.sock"
    }

    /// The system keychaind's socket (`keychaind --system`): `/run/keychain/keychaind.sock`. Every user may connect;
    /// the daemon serves each the keychain of the uid the kernel gives for the connection.
    package static var systemPath: String { systemFolder + "/keychaind.sock" }

    /// The system keychaind's socket as clients look for it: ``systemPath``, or `KEYCHAIN_SYSTEM_SOCKET` where a
    /// test or a container puts the system keychaind elsewhere (an absolute path; anything else is ignored).
    package static func systemPath(_ environment: [String: String]) -> String {
        guard let moved = environment["KEYCHAIN_SYSTEM_SOCKET"], moved.hasPrefix("/") else { return systemPath }
        return moved
    }

    /// The SSH agent's socket of the keychaind at `socket` (`keychaind --ssh-agent`): `ssh-agent.sock` in the same folder.
    package static func sshAgentPath(forSocket socket: String) -> String {
        NSString(string: socket).deletingLastPathComponent + "/ssh-agent.sock"
    }

    /// The lock that clients starting a keychaind on demand, and such a keychaind when it exits, take turns on: in
    /// the folder of its socket.
    package static func autostartLockPath(forSocket socket: String) -> String {
        NSString(string: socket).deletingLastPathComponent + "/autostart.lock"
    }

    /// Whether the failure of ``connect(_:)`` says that nothing listens at the path (no socket file, or a stale one),
    /// as opposed to a keychaind that is there but refuses or cannot be reached.
    package static func nobodyListens(_ error: KeychainError) -> Bool {
        guard let posix = error.cause as? POSIXError else { return false }
        return posix.code == .ENOENT || posix.code == .ECONNREFUSED
    }

    /// Whether something accepts connections at `path` (a second keychaind checks before it binds).
    package static func accepts(_ path: String) -> Bool {
        guard let fd = try? connect(path) else { return false }
        close(fd)
        return true
    }

    /// The socket address of `path`; ``KeychainError/Code/invalidParameter`` for a path too long for one.
    package static func address(_ path: String) throws(KeychainError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw KeychainError(code: .invalidParameter, message: "The keychaind socket path \(path) is longer than \(capacity - 1) bytes. Choose a shorter path.")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// A blocking, close-on-exec stream connection to `path`. Fails with ``KeychainError/Code/notAvailable`` when
    /// nothing listens there (its cause the `POSIXError` of `connect`), and ``KeychainError/Code/invalidParameter`` for a path too long for a socket address.
    package static func connect(_ path: String) throws(KeychainError) -> Int32 {
        var address = try address(path)
        #if os(Linux)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw KeychainError(code: .notAvailable, message: String(cString: strerror(errno))) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let number = errno
            close(fd)
            throw KeychainError(
                code: .notAvailable, message: String(cString: strerror(number)),
                cause: POSIXError(POSIXErrorCode(rawValue: number) ?? .EIO))
        }
        return fd
    }
}

private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
