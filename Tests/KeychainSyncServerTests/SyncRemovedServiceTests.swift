#if Network
import Foundation
import KeychainCore
@testable import KeychainSyncClient
import KeychainSyncServer
import Testing

/// A device removed from its account, as keychaind runs it: it learns it from the server's refusal, says when and
/// by whom, stops its rounds and its push connection, leaves no socket open, and can join again with a new key.
@Suite("A removed device's sync service", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncRemovedServiceTests {
    typealias Device = SyncTestDevice

    @Test("A removed device learns it, holds no socket after 10 push refusals, and joins again with a new device key")
    func removedDeviceStopsAndRejoins() async throws {
        // A short idle timeout: the server closes what a refused client leaves open after it.
        var configuration = SyncServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.idleTimeout = .seconds(2)
        try await TestServers.with(configuration: configuration) { servers in
            let port = servers.ports[0]
            let server = SyncServiceTests.server(port)
            let a = try Device(), b = try Device()
            let serviceA = SyncServiceTests.service(a), serviceB = SyncServiceTests.service(b)
            let account = try await SyncServiceTests.pair(serviceA, serviceB, server: server)
            let eventsB = serviceB.events()
            let runB = Task { await serviceB.run() }
            defer { runB.cancel() }
            try await SyncServiceTests.awaitEvent(eventsB) { $0 == .push(connected: true) }

            // A removes B. The server closes B's push socket; B's next connection is refused, and the round that
            // refusal asks for learns why.
            let oldID = try b.deviceID
            #expect(try await serviceA.perform(.removeDevice(id: oldID)) == .removed)
            try await SyncServiceTests.awaitEvent(eventsB) { event in
                guard case .roundFailed(let message) = event else { return false }
                return message.contains("removed from account \(account)")
            }
            guard case .status(let status) = try await serviceB.perform(.status) else { throw SyncServiceTests.Failure("no status") }
            #expect(status.joined == false)
            #expect(status.removal?.by == "laptop")
            #expect(status.removal?.date != nil)

            // A round now fails at once with its own code, saying when, by whom, and how to join again.
            let refused = await #expect(throws: KeychainError.self) { try await serviceB.perform(.now) }
            #expect(refused?.code == .syncDeviceRemoved)
            #expect(refused?.status == .authFailed)
            #expect(refused?.message.contains("by laptop") == true)
            #expect(refused?.message.contains("security sync join --server \(server) --account \(account)") == true)

            // Ten more refusals of the push socket, straight: none leaves a socket behind (the WebSocket client
            // leaves a refused upgrade's socket open; each connection's own event loop, shut down, closes it). The
            // HTTP client's pooled connections close when the server's idle timeout closes them.
            let session = try serviceB.session()
            for _ in 0..<10 { #expect(await serviceB.listenForPush(session) == false) }
            #expect(try await Self.eventually { try Self.socketsOpen(to: port) == 0 })

            // Joining again asks afresh with a new device key, and completes once approved.
            guard case .invitation(let invitation, _, _) = try await serviceA.perform(.invite) else { throw SyncServiceTests.Failure("no invitation") }
            guard case .joinPending(let code, let fingerprint) = try await serviceB.perform(.join(server: server, account: account, invitation: invitation)) else {
                throw SyncServiceTests.Failure("no new join")
            }
            let newID = try b.deviceID
            #expect(newID != oldID)
            #expect(try await serviceA.perform(.approve(code: code, deviceName: "desktop again")) == .approved(fingerprint: fingerprint))
            #expect(try await serviceB.perform(.join(server: server, account: account)) == .joined(account: account))
            guard case .status(let after) = try await serviceB.perform(.status) else { throw SyncServiceTests.Failure("no status") }
            #expect(after.joined && after.removal == nil && after.device == newID)
            runB.cancel()
            await runB.value
        }
    }

    /// Whether `condition` holds within 20 s, looked at every 100 ms.
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }

    /// How many of this process's sockets are connected (or connecting, or closing) to `port` on this machine:
    /// the TCP sockets of /proc/net/tcp{,6} whose remote port it is and whose inode one of our descriptors holds.
    static func socketsOpen(to port: Int) throws -> Int {
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9 else { continue }
                let remote = fields[2].split(separator: ":")
                // State 06 is TIME_WAIT: no descriptor holds it any more.
                guard remote.count == 2, Int(remote[1], radix: 16) == port, fields[3] != "06" else { continue }
                inodes.insert(String(fields[9]))
            }
        }
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        return descriptors.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd) else { return false }
            return target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
        }.count
    }
}
#endif
