import CKeychainLinux
import Foundation
import KeychainCore
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// keychaind's SSH agent socket (`SSH_AUTH_SOCK`): accepts connections of this user only (`SO_PEERCRED`, which also
/// names the program that prompts mention), reads the
/// agent protocol's frames (at most 256 KiB each) and answers each with ``SSHAgentHandler``, one thread per connection,
/// at most ``maximumConnections`` at once (more are closed at once).
package final class SSHAgentListener: Service, Sendable {
    /// The socket's path.
    package let path: String
    /// What answers the requests.
    package let handler: SSHAgentHandler
    /// The most connections served at once.
    package let maximumConnections: Int
    private let open = Atomic<Int>(0)
    private let listening = Mutex<Int32>(-1)

    /// A listening socket systemd passed (socket activation), used instead of making one at ``path``.
    package let inherited: Int32?

    /// A listener at `path` (its folder must exist and be private to this user), or on the socket systemd passed
    /// (`inherited`; `path` then only names it).
    package init(path: String, handler: SSHAgentHandler, maximumConnections: Int = 64, inherited: Int32? = nil) {
        self.path = path
        self.inherited = inherited
        self.handler = handler
        self.maximumConnections = maximumConnections
    }

    /// Makes the socket: an old socket at the path is replaced, anything else there is refused.
    func bindSocket() throws(KeychainError) -> Int32 {
        if let inherited {
            // Not passed on to the programs keychaind starts (pinentry).
            _ = fcntl(inherited, F_SETFD, FD_CLOEXEC)
            return inherited
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == getuid() else {
                throw KeychainError(code: .io, message: "\(path) exists and is not this user's socket; move it away, then start keychaind again.")
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeychainError(code: .io, message: "The SSH agent's socket could not be made (errno \(errno)).") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw KeychainError(code: .invalidParameter, message: "The SSH agent's socket path \(path) is too long for a Unix socket.")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw KeychainError(code: .io, message: "The SSH agent could not listen at \(path) (\(reason)).")
        }
        return fd
    }

    /// Serves until the graceful shutdown.
    package func run() async throws {
        let fd = try bindSocket()
        listening.withLock { $0 = fd }
        // Notice, as keychaind's own socket is announced: what waits for the agent waits for this line.
        handler.logger.notice("SSH agent listening", metadata: ["socket": "\(path)"])
        // Keys past their lifetime (ssh-add -t) are deleted at the next request, and by this sweep when none comes.
        let sweep = Task { [handler] in
            while (try? await Task.sleep(for: .seconds(10))) != nil {
                do throws(KeychainError) {
                    _ = try handler.store.removeExpired()
                } catch {
                    handler.logger.debug("expired SSH keys not swept yet", metadata: ["reason": "\(error.message)"])
                }
            }
        }
        defer { sweep.cancel() }
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    acceptConnections(fd)
                    done.resume()
                }
                thread.name = "ssh-agent accept"
                thread.start()
            }
        } onGracefulShutdown: { [self] in
            // Wakes accept(): it fails, and the loop ends.
            listening.withLock { _ = shutdown($0, Int32(SHUT_RDWR)) }
        }
        close(fd)
        // A socket systemd made is systemd's to remove.
        if inherited == nil { unlink(path) }
    }

    private func acceptConnections(_ fd: Int32) {
        while true {
            let connection = ckeychain_accept(fd)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            var credentials = ckeychain_peer_credentials()
            guard ckeychain_peer_credentials_of(connection, &credentials) == 0, credentials.uid == getuid() else {
                handler.logger.notice("an SSH agent connection from another user was refused")
                close(connection)
                continue
            }
            guard open.add(1, ordering: .relaxed).newValue <= maximumConnections else {
                open.subtract(1, ordering: .relaxed)
                handler.logger.notice("an SSH agent connection was refused: \(maximumConnections) are open")
                close(connection)
                continue
            }
            let peer = SSHAgentPeer.of(pid: credentials.pid, uid: credentials.uid)
            let thread = Thread { [self] in
                serve(connection, peer: peer)
                close(connection)
                open.subtract(1, ordering: .relaxed)
            }
            thread.name = "ssh-agent connection"
            thread.start()
        }
    }

    /// Answers the requests on `fd` until the client closes it or sends something malformed.
    private func serve(_ fd: Int32, peer: SSHAgentPeer) {
        var state = SSHAgentConnection(peer: peer)
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            do {
                while let (message, consumed) = try SSHAgentFrame.next(in: buffer) {
                    buffer.removeFirst(consumed)
                    let response: SSHAgentResponse
                    do {
                        response = handler.answer(try SSHAgentRequest(message: message), connection: &state)
                    } catch {
                        response = .failure
                    }
                    guard Self.send(SSHAgentFrame.frame(response.message), on: fd) else { return }
                }
            } catch {
                // A frame over the limit: the connection is closed.
                return
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            buffer += chunk[0..<count]
        }
    }

    static func send(_ bytes: [UInt8], on fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + sent }, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}
