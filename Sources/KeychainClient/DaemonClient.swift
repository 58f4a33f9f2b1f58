import Foundation
import KeychainCore
import KeychainProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A client of keychaind: sends one request per call and waits for its response, over blocking Unix-socket
/// connections kept in a small pool, so calls from many threads run side by side without sharing a
/// connection.
package final class DaemonClient: Sendable {
    package let socketPath: String
    private let idle = Mutex<[Int32]>([])
    private let nextID = Atomic<UInt32>(1)
    /// Idle connections kept for reuse; more are closed after their call.
    private let maximumIdle = 16

    package init(socketPath: String) {
        self.socketPath = socketPath
    }

    deinit {
        for fd in idle.withLock({ $0 }) { close(fd) }
    }

    /// Whether a daemon accepts connections at the path: an idle connection is open, or a new one can be
    /// made (and is kept for the next call).
    package func isReachable() -> Bool {
        guard let fd = try? checkOut() else { return false }
        checkIn(fd)
        return true
    }

    /// Sends `request` and returns keychaind's response. A failure response comes back as the
    /// ``KeychainError`` the daemon reported, with its code, `OSStatus` and message.
    package func call(_ request: KeychainRequest) throws(KeychainError) -> KeychainResponse {
        let fd = try checkOut()
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let response: Frame
        do throws(KeychainError) {
            try send(fd, Frame(id: id, body: .request(request)).encoded)
            response = try receive(fd)
        } catch {
            close(fd)
            throw error
        }
        switch response.body {
        case .response(let answer) where response.id == id:
            checkIn(fd)
            if case .failure(let error) = answer { throw error }
            return answer
        case .versionRefused(_, let message):
            close(fd)
            throw KeychainError(code: .notAvailable, status: .wrongSecVersion, message: message)
        default:
            close(fd)
            throw lost("answered a different request")
        }
    }

    // MARK: Connections

    private func checkOut() throws(KeychainError) -> Int32 {
        while let fd = idle.withLock({ $0.popLast() }) {
            if DaemonClient.isOpen(fd) { return fd }
            close(fd)
        }
        return try connect()
    }

    private func checkIn(_ fd: Int32) {
        let kept = idle.withLock { pool in
            guard pool.count < maximumIdle else { return false }
            pool.append(fd)
            return true
        }
        if !kept { close(fd) }
    }

    /// Whether an idle connection is still usable: the daemon has not closed it (it restarted, say).
    private static func isOpen(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, 0)
        // An idle connection has nothing to read; readable means end of stream or an error.
        return n == 0
    }

    private func unreachable(_ reason: String) -> KeychainError {
        KeychainError(code: .notAvailable, message: "keychaind is not answering at \(socketPath) (\(reason)). Start it with `systemctl --user start keychaind.socket` or `keychaind --foreground`, or unset KEYCHAIN_DAEMON_SOCKET to open the keychain directly.")
    }

    private func lost(_ reason: String) -> KeychainError {
        KeychainError(code: .notAvailable, message: "The connection to keychaind at \(socketPath) was lost (\(reason)); the call may not have completed. Check that keychaind is running and try again.")
    }

    private func connect() throws(KeychainError) -> Int32 {
        do {
            return try DaemonSocket.connect(socketPath)
        } catch where error.code == .notAvailable {
            throw unreachable(error.message)
        }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) throws(KeychainError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return systemSend(fd, base + offset, raw.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw lost(String(cString: strerror(errno)))
            }
            offset += n
        }
    }

    private func receiveExactly(_ fd: Int32, _ count: Int) throws(KeychainError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return recv(fd, base + offset, count - offset, 0)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw lost(String(cString: strerror(errno)))
            }
            if n == 0 { throw lost("keychaind closed the connection; a keychaind older than this program does so for requests it cannot read, so install both from the same release") }
            offset += n
        }
        return buffer
    }

    private func receive(_ fd: Int32) throws(KeychainError) -> Frame {
        let prefix = try receiveExactly(fd, 4)
        let announced = prefix.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard let length = try? Frame.checkedLength(announced) else { throw lost("a malformed response") }
        let body = try receiveExactly(fd, length)
        do {
            return try Frame.decode(body: body)
        } catch where error.status == .wrongSecVersion {
            throw error
        } catch {
            throw lost("a malformed response")
        }
    }
}

private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if os(Linux)
    send(fd, bytes, count, Int32(MSG_NOSIGNAL))
    #else
    send(fd, bytes, count, 0)
    #endif
}
