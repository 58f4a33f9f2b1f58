import Foundation
import Crypto
import GRDB

#if canImport(Glibc)
import Glibc
#endif

/// The least a keychain store must do, with the libraries the keychain uses (GRDB over the system SQLite,
/// swift-crypto): the physical floor each keychain figure is compared with, measured in the same run.
///
/// One table of 16-byte keys and AES-256-GCM-sealed 24-byte values, in WAL mode with `synchronous=FULL` (what
/// the keychain uses, so each acknowledged write is on disk).
public final class RawStore: @unchecked Sendable {
    private let queue: DatabaseQueue
    private let key = SymmetricKey(size: .bits256)
    private let folder: String
    private var next = 0

    /// Creates a store holding `count` rows in a new temporary folder.
    public init(count: Int) throws {
        folder = NSTemporaryDirectory() + "skb-raw-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        queue = try DatabaseQueue(path: folder + "/raw.db", configuration: config)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, k BLOB NOT NULL UNIQUE, v BLOB NOT NULL)")
        }
        try queue.write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO item (k, v) VALUES (?, ?)")
            for index in 0 ..< count {
                try insert.execute(arguments: [RawStore.rowKey(index), try seal(index)])
            }
        }
        next = count
    }

    static func rowKey(_ index: Int) -> Data {
        withUnsafeBytes(of: UInt64(index).bigEndian) { Data(repeating: 0, count: 8) + Data($0) }
    }

    private func seal(_ index: Int) throws -> Data {
        try AES.GCM.seal(Data("raw-secret-\(index)-padding-to-24".utf8.prefix(24)), using: key).combined ?? Data()
    }

    /// One durable point insert: a transaction of one INSERT, committed with a full sync.
    public func insert() throws {
        let index = next
        next += 1
        let value = try seal(index)
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT INTO item (k, v) VALUES (?, ?)").execute(arguments: [RawStore.rowKey(index), value])
        }
    }

    /// One point lookup by key and the AES-GCM open of its value.
    public func lookup(_ index: Int) throws -> Data {
        try queue.read { db in
            guard let sealed = try Data.fetchOne(db.cachedStatement(sql: "SELECT v FROM item WHERE k = ?"), arguments: [RawStore.rowKey(index)]) else {
                throw BenchmarkFailure("raw row \(index) is missing")
            }
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key)
        }
    }

    /// Removes the store's files.
    public func remove() {
        try? queue.close()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// A bare Unix-domain socket round trip: 64 bytes to an echo thread and back, the floor under any daemon call.
public final class SocketEcho: @unchecked Sendable {
    private let client: Int32
    private let server: Int32

    /// Opens a connected pair and starts the echo thread.
    public init() throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw BenchmarkFailure("socketpair failed: \(String(cString: strerror(errno)))")
        }
        client = fds[0]
        server = fds[1]
        let server = self.server
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress, 64, Int32(MSG_WAITALL)) }
                if n <= 0 { break }
                let sent = buffer.withUnsafeBytes { send(server, $0.baseAddress, n, 0) }
                if sent != n { break }
            }
            close(server)
        }
        thread.start()
    }

    /// One request and its response.
    public func roundTrip() -> Bool { echoRoundTrip(client) }

    /// Ends the echo thread.
    public func stop() {
        shutdown(client, Int32(SHUT_RDWR))
        close(client)
    }
}

/// Sends 64 bytes on `fd` and waits for 64 back: the client half of both echo floors.
func echoRoundTrip(_ fd: Int32) -> Bool {
    var buffer = [UInt8](repeating: 7, count: 64)
    let sent = buffer.withUnsafeBytes { send(fd, $0.baseAddress, 64, 0) }
    let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 64, Int32(MSG_WAITALL)) }
    return sent == 64 && received == 64
}
