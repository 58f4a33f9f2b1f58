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
    /// Bumped whenever the rows a kept store holds change, so older ones are rebuilt.
    static let storeFormat = "1"

    private let queue: DatabaseQueue
    private let key: SymmetricKey
    private let folder: String
    /// A kept store stays on disk for later runs; a scratch store is removed by ``remove()``.
    private let kept: Bool
    private var next: Int

    /// Creates a scratch store holding `count` rows in a new temporary folder (for the insert benchmark, whose
    /// rows would otherwise pile up in a kept store).
    public init(count: Int) throws {
        folder = NSTemporaryDirectory() + "skb-raw-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        kept = false
        key = SymmetricKey(size: .bits256)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        queue = try RawStore.open(folder + "/raw.db")
        next = count
        try fill(count, log: { _ in })
    }

    private init(folder: String, key: SymmetricKey, count: Int) throws {
        self.folder = folder
        self.key = key
        kept = true
        queue = try RawStore.open(folder + "/raw.db")
        next = count
    }

    /// The kept store of `count` rows under `.stores/raw-<count>` (see ``BenchEnvironment/storesRoot``), built
    /// first when it is missing or stale, like the item stores: a 1,000,000-row store takes a while to build, so
    /// later runs reuse it. Its key is kept beside it. Only read it: the insert benchmark uses a scratch store.
    public static func kept(count: Int, log: @escaping @Sendable (String) -> Void = { _ in }) throws -> RawStore {
        let folder = BenchEnvironment.storesRoot + "/raw-\(count)"
        let marker = folder + "/bench-complete"
        let keyPath = folder + "/key"
        let expected = "\(storeFormat) \(count)"
        if let found = try? String(contentsOfFile: marker, encoding: .utf8), found == expected,
            let bytes = FileManager.default.contents(atPath: keyPath), bytes.count == 32
        {
            return try RawStore(folder: folder, key: SymmetricKey(data: bytes), count: count)
        }
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        guard FileManager.default.createFile(atPath: keyPath, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            throw BenchmarkFailure("cannot write \(keyPath)")
        }
        log("building the \(count)-row raw store in \(folder) (once; later runs reuse it)")
        let started = ContinuousClock.now
        let store = try RawStore(folder: folder, key: key, count: count)
        try store.fill(count, log: log)
        try expected.write(toFile: marker, atomically: true, encoding: .utf8)
        log("built \(count) raw rows in \(ContinuousClock.now - started)")
        return store
    }

    private static func open(_ path: String) throws -> DatabaseQueue {
        var config = Configuration()
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return try DatabaseQueue(path: path, configuration: config)
    }

    /// Creates the table and inserts rows `0 ..< count`, 100,000 to a transaction.
    private func fill(_ count: Int, log: @Sendable (String) -> Void) throws {
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, k BLOB NOT NULL UNIQUE, v BLOB NOT NULL)")
        }
        let started = ContinuousClock.now
        let batch = 100_000
        for first in stride(from: 0, to: count, by: batch) {
            try queue.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO item (k, v) VALUES (?, ?)")
                for index in first..<min(first + batch, count) {
                    try insert.execute(arguments: [RawStore.rowKey(index), try seal(index)])
                }
            }
            if count > batch { log("  \(min(first + batch, count)) rows (\(ContinuousClock.now - started))") }
        }
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

    /// Closes the store, and removes its files when it is a scratch store.
    public func remove() {
        try? queue.close()
        if !kept { try? FileManager.default.removeItem(atPath: folder) }
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
