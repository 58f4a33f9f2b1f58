#if Network
import Foundation
import KeychainCore
import KeychainSync
@testable import KeychainSyncClient
import KeychainSyncServer
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// The sync service (what keychaind runs) with real keychains on disk, through the real server and PostgreSQL:
/// its commands and their error codes, rounds started by push and local writes, the status it records, and
/// recovery from a server that was down.
@Suite("The sync service", .needsPostgres, .timeLimit(.minutes(10)))
struct SyncServiceTests {
    typealias Device = SyncTestDevice

    /// The longest any awaited event may take (generous: CI machines are slow and busy; nothing is timed).
    static let patience = Duration.seconds(20)

    static func service(_ device: Device) -> SyncService {
        SyncService(engine: device.engine, mirrorPath: device.mirrorPath, pollInterval: .seconds(3600), logger: TestPostgres.logger)
    }

    static func server(_ port: Int) -> String { "http://127.0.0.1:\(port)" }

    /// Makes the account on `a` and joins `b` to it through the services' commands; returns the account.
    static func pair(_ a: SyncService, _ b: SyncService, server: String) async throws -> String {
        guard case .accountCreated(let account) = try await a.perform(.createAccount(server: server, deviceName: "laptop")) else {
            throw Failure("no account")
        }
        guard case .invitation(let invitation, _, _) = try await a.perform(.invite) else { throw Failure("no invitation") }
        guard case .joinPending(let code, let fingerprint) = try await b.perform(.join(server: server, account: account, invitation: invitation)) else {
            throw Failure("no join")
        }
        #expect(try await a.perform(.approve(code: code, deviceName: "desktop")) == .approved(fingerprint: fingerprint))
        #expect(try await b.perform(.join(server: server, account: account)) == .joined(account: account))
        return account
    }

    @Test("An item added on one device reaches the other with nobody asking for a round (local-write trigger, then push)")
    func pushAndLocalWrites() async throws {
        try await TestServers.with { servers in
            let a = try Device(), b = try Device()
            let serviceA = Self.service(a), serviceB = Self.service(b)
            _ = try await Self.pair(serviceA, serviceB, server: Self.server(servers.ports[0]))
            let eventsA = serviceA.events(), eventsB = serviceB.events()
            let runA = Task { await serviceA.run() }, runB = Task { await serviceB.run() }
            defer {
                runA.cancel()
                runB.cancel()
            }
            // Both push sockets open (their first rounds may come before or after).
            try await Self.awaitEvent(eventsA) { $0 == .push(connected: true) }
            try await Self.awaitEvent(eventsB) { $0 == .push(connected: true) }

            try a.add("mail.example.com", secret: "hunter2")
            try await Self.awaitEvent(eventsB) { event in
                guard case .round = event else { return false }
                return try b.secret("mail.example.com") == "hunter2"
            }
            // B can hold the item before A's uploading round has recorded itself (the server pushes as soon as the
            // upload commits): wait for that round's event, which comes after its status is written.
            try await Self.awaitEvent(eventsA) { event in
                guard case .round(let report) = event else { return false }
                return report.uploaded == 1
            }

            // Status after rounds: the time of the last one, nothing pending, no error, push up.
            guard case .status(let status) = try await serviceA.perform(.status) else { throw Failure("no status") }
            #expect(status.lastSync != nil)
            #expect(status.lastError == nil)
            #expect(status.pendingChanges == 0)
            #expect(status.joined)
            #expect(status.pushConnected)
            #expect(status.conflictsResolved == 0)
            runA.cancel()
            runB.cancel()
            await runA.value
            await runB.value
        }
    }

    @Test("While the keychain is locked its rounds fail and the change waits; unlocked, a round starts at once, not at the next retry")
    func unlockStartsARound() async throws {
        try await TestServers.with { servers in
            let a = try Device(), b = try Device()
            let serviceA = Self.service(a), serviceB = Self.service(b)
            _ = try await Self.pair(serviceA, serviceB, server: Self.server(servers.ports[0]))
            try b.engine.changePasscode(from: nil, to: "1234")
            b.engine.lock()
            try a.add("mail.example.com", secret: "hunter2")
            let uploaded = try await serviceA.perform(.now)
            #expect(uploaded.counts == .round(SyncRoundReport(uploaded: 1)))
            guard case .round(let report) = uploaded else { throw Failure("no round") }
            // What went up: one record, its sealed size.
            #expect(report.transfer.sentRecords == 1 && report.transfer.toSend == 1 && report.transfer.sentBytes > 100)

            let eventsB = serviceB.events()
            let runB = Task { await serviceB.run() }
            defer { runB.cancel() }
            // Four failed rounds in a row (the item cannot be written while locked): the next retry is 8 s away.
            let failed = Mutex(0)
            try await Self.awaitEvent(eventsB) { event in
                guard case .roundFailed = event else { return false }
                return failed.withLock { count in
                    count += 1
                    return count == 4
                }
            }
            #expect(try b.secret("mail.example.com") == nil)
            guard case .status(let locked) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(locked.lastError != nil)

            try b.engine.unlock(passcode: "1234")
            let unlocked = ContinuousClock.now
            try await Self.awaitEvent(eventsB) { event in
                guard case .round = event else { return false }
                return try b.secret("mail.example.com") == "hunter2"
            }
            // Well before the 8 s retry: the unlock itself started the round.
            #expect(ContinuousClock.now - unlocked < .seconds(6))
            runB.cancel()
            await runB.value
        }
    }

    @Test("A local change that wins over an incoming one counts as a resolved conflict, in the round and in the status")
    func conflictsAreCounted() async throws {
        try await TestServers.with { servers in
            let a = try Device(), b = try Device()
            let serviceA = Self.service(a), serviceB = Self.service(b)
            _ = try await Self.pair(serviceA, serviceB, server: Self.server(servers.ports[0]))
            try a.add("vpn.example.com", secret: "first")
            #expect(try await serviceA.perform(.now).counts == .round(SyncRoundReport(uploaded: 1)))
            #expect(try await serviceB.perform(.now).counts == .round(SyncRoundReport(applied: 1)))

            // Both change it; b's change is the later one and wins on b.
            try a.engine.update(a.query("vpn.example.com"), attributes: [:], sync: nil, data: Data("from a".utf8), caller: AccessPolicy(groups: ["*"]))
            b.clock.advance(milliseconds: 5)  // a later modification time on b (the test clocks move only when told)
            try b.engine.update(b.query("vpn.example.com"), attributes: [:], sync: nil, data: Data("from b".utf8), caller: AccessPolicy(groups: ["*"]))
            #expect(try await serviceA.perform(.now).counts == .round(SyncRoundReport(uploaded: 1)))
            guard case .status(let pending) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(pending.pendingChanges == 1)
            #expect(try await serviceB.perform(.now).counts == .round(SyncRoundReport(uploaded: 1, conflictsResolved: 1)))
            #expect(try await serviceA.perform(.now).counts == .round(SyncRoundReport(applied: 1)))
            #expect(try a.secret("vpn.example.com") == "from b")

            guard case .status(let status) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(status.conflictsResolved == 1)
            #expect(status.pendingChanges == 0)
            #expect(status.lastError == nil)
        }
    }

    @Test("A server that is down is recorded as the last error; the service retries and recovers when it is back")
    func serverDownAndBack() async throws {
        try await TestServers.with { servers in
            let a = try Device()
            let service = Self.service(a)
            // An instance of its own, on the shared database, that the test stops and starts again at the same port.
            let port = try await Self.withInstance(database: servers.database, port: 0) { port in
                _ = try await service.perform(.createAccount(server: Self.server(port), deviceName: "laptop"))
                try a.add("one", secret: "1")
                #expect(try await service.perform(.now).counts == .round(SyncRoundReport(uploaded: 1)))
                return port
            }
            guard case .status(let before) = try await service.perform(.status) else { throw Failure("no status") }
            let lastSync = try #require(before.lastSync)

            let events = service.events()
            let run = Task { await service.run() }
            defer { run.cancel() }
            try a.add("two", secret: "2")
            try await Self.awaitEvent(events) { event in
                if case .roundFailed = event { return true }
                return false
            }
            let failed = await #expect(throws: KeychainError.self) { try await service.perform(.now) }
            #expect(failed?.code == .io)
            guard case .status(let down) = try await service.perform(.status) else { throw Failure("no status") }
            #expect(down.lastError?.contains("could not be reached") == true)
            #expect(down.lastSync == lastSync)
            #expect(down.pendingChanges == 1)
            #expect(!down.pushConnected)

            try await Self.withInstance(database: servers.database, port: port) { _ in
                // The pending change goes up, and the push socket opens again.
                let seen = Mutex((uploaded: false, pushed: false))
                try await Self.awaitEvent(events) { event in
                    seen.withLock { seen in
                        if case .round(let report) = event, report.uploaded == 1 { seen.uploaded = true }
                        if event == .push(connected: true) { seen.pushed = true }
                        return seen.uploaded && seen.pushed
                    }
                }
                guard case .status(let back) = try await service.perform(.status) else { throw Failure("no status") }
                #expect(back.lastError == nil)
                #expect(back.pendingChanges == 0)
                #expect(try #require(back.lastSync) > lastSync)
                run.cancel()
                await run.value
            }
        }
    }

    @Test("A write by another process on the same keychain (another engine over its files) starts a round too")
    func writesByAnotherProcess() async throws {
        try await TestServers.with { servers in
            let a = try Device()
            let service = Self.service(a)
            _ = try await service.perform(.createAccount(server: Self.server(servers.ports[0]), deviceName: "laptop"))
            let events = service.events()
            let run = Task { await service.run() }
            defer { run.cancel() }
            // Settled: the push socket is open and a round ran after it opened.
            try await Self.awaitEvent(events) { $0 == .push(connected: true) }
            try await Self.awaitEvent(events) { event in
                if case .round = event { return true }
                return false
            }

            let other = try KeychainEngine(location: KeychainLocation(home: a.home), tpm: nil, passcodePolicy: .testing)
            var q = a.query("from-another-process")
            q.attributes["pdmn"] = .string("ak")
            q.sync = .synchronizable
            q.valueData = Data("elsewhere".utf8)
            _ = try other.add(q, caller: AccessPolicy(groups: ["*"]))
            try await Self.awaitEvent(events) { event in
                guard case .round(let report) = event else { return false }
                return report.uploaded == 1
            }
            run.cancel()
            await run.value
        }
    }

    @Test("Every command's answer, and the error codes of those that cannot be done")
    func commands() async throws {
        try await TestServers.with { servers in
            let a = try Device(), b = try Device()
            let serviceA = Self.service(a), serviceB = Self.service(b)
            let server = Self.server(servers.ports[0])

            // In no account: the status says so (and makes no mirror); the rest cannot be done.
            #expect(try await serviceA.perform(.status) == .status(SyncStatusReport()))
            for command in [SyncCommand.now, .devices, .removeDevice(id: "00"), .approve(code: "ABCDE-FGHJK", deviceName: "x")] {
                let error = await #expect(throws: KeychainError.self) { try await serviceA.perform(command) }
                #expect(error?.code == .itemNotFound, "\(command)")
            }
            #expect(!FileManager.default.fileExists(atPath: a.mirrorPath))
            let malformed = await #expect(throws: KeychainError.self) { try await serviceA.perform(.approve(code: "ABC-12", deviceName: "x")) }
            #expect(malformed?.code == .invalidParameter)
            #expect(malformed?.status == .param)
            #expect(malformed?.message.contains("XXXXX-XXXXX") == true)
            let badServer = await #expect(throws: KeychainError.self) {
                try await serviceA.perform(.createAccount(server: "ftp://127.0.0.1", deviceName: "laptop"))
            }
            #expect(badServer?.status == .param)

            guard case .accountCreated(let account) = try await serviceA.perform(.createAccount(server: server, deviceName: "laptop")) else {
                throw Failure("no account")
            }
            let again = await #expect(throws: KeychainError.self) { try await serviceA.perform(.createAccount(server: server, deviceName: "laptop")) }
            #expect(again?.code == .duplicateItem)
            let unknown = await #expect(throws: KeychainError.self) { try await serviceA.perform(.approve(code: "00000-00000", deviceName: "x")) }
            #expect(unknown?.code == .itemNotFound)

            // Joining needs an invitation: without one nothing is asked (errSecParam); a made-up one is refused by
            // the server, which stores nothing.
            let uninvited = await #expect(throws: KeychainError.self) { try await serviceB.perform(.join(server: server, account: account)) }
            #expect(uninvited?.code == .invalidParameter)
            let forged = await #expect(throws: KeychainError.self) {
                try await serviceB.perform(.join(server: server, account: account, invitation: "AAAA-BBBB-CCCC"))
            }
            #expect(forged?.code == .authenticationFailed)
            #expect(forged?.message.contains("invitation_required") == true)
            guard case .pending(let nobody) = try await serviceA.perform(.pending) else { throw Failure("no pending list") }
            #expect(nobody.isEmpty)
            // Joining: the same code until approved, then joined.
            guard case .invitation(let invitation, let uri, let expires) = try await serviceA.perform(.invite) else { throw Failure("no invitation") }
            #expect(uri.hasPrefix("keychain-sync://join?") && uri.contains(account))
            #expect(expires.timeIntervalSinceNow > 800 && expires.timeIntervalSinceNow <= 900)
            guard case .joinPending(let code, let fingerprint) = try await serviceB.perform(.join(server: server, account: account, invitation: invitation)) else {
                throw Failure("no join")
            }
            guard case .pending(let waiting) = try await serviceA.perform(.pending) else { throw Failure("no pending list") }
            #expect(waiting.map(\.code) == [code] && waiting.map(\.fingerprint) == [fingerprint])
            #expect(try await serviceB.perform(.join(server: server, account: account)) == .joinPending(code: code, fingerprint: fingerprint))
            guard case .status(let pending) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(pending.account == account && !pending.joined)
            let notJoined = await #expect(throws: KeychainError.self) { try await serviceB.perform(.now) }
            #expect(notJoined?.code == .itemNotFound)
            // Typed as a person might: lower case, no dash.
            let typed = code.lowercased().replacingOccurrences(of: "-", with: "")
            #expect(try await serviceA.perform(.approve(code: typed, deviceName: "desktop")) == .approved(fingerprint: fingerprint))
            #expect(try await serviceB.perform(.join(server: server, account: account)) == .joined(account: account))
            #expect(try await serviceB.perform(.join(server: server, account: account)) == .joined(account: account))

            let aID = try SyncKeyring(engine: a.engine).deviceKeys().publicKeys.deviceID
            let bID = try SyncKeyring(engine: b.engine).deviceKeys().publicKeys.deviceID
            guard case .devices(let devices) = try await serviceB.perform(.devices) else { throw Failure("no devices") }
            let byID = Dictionary(devices.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(Set(byID.keys) == [aID, bID] && devices.count == 2)
            #expect(byID[aID]?.name == "laptop" && byID[aID]?.isThisDevice == false)
            #expect(byID[bID]?.name == "desktop" && byID[bID]?.isThisDevice == true && byID[bID]?.fingerprint == fingerprint)

            #expect(try await serviceA.perform(.now).counts == .round(SyncRoundReport()))
            guard case .status(let status) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(status.account == account)
            #expect(status.server == server)
            #expect(status.device == bID)
            #expect(status.joined)
            #expect(status.lastSync == nil)

            let noSuchDevice = await #expect(throws: KeychainError.self) { try await serviceA.perform(.removeDevice(id: String(repeating: "0", count: 32))) }
            #expect(noSuchDevice?.code == .itemNotFound)
            #expect(try await serviceA.perform(.removeDevice(id: bID)) == .removed)
            guard case .devices(let remaining) = try await serviceA.perform(.devices) else { throw Failure("no devices") }
            #expect(remaining.map(\.id) == [aID])
            // The removed device is refused, and records why.
            let refused = await #expect(throws: KeychainError.self) { try await serviceB.perform(.now) }
            #expect(refused?.code == .syncDeviceRemoved)
            guard case .status(let removed) = try await serviceB.perform(.status) else { throw Failure("no status") }
            #expect(removed.removal?.by == "laptop")
            #expect(removed.joined == false)
        }
    }

    // MARK: Helpers

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// No event satisfied the condition within ``patience``.
    struct EventNeverCame: Error {}

    /// Waits (at most ``patience``) for an event of `events` for which `condition` holds.
    static func awaitEvent(
        _ events: AsyncStream<SyncServiceEvent>,
        _ condition: @escaping @Sendable (SyncServiceEvent) throws -> Bool
    ) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events where try condition(event) { return true }
                return false
            }
            group.addTask {
                try await Task.sleep(for: patience)
                return false
            }
            defer { group.cancelAll() }
            guard try await group.next() == true else { throw EventNeverCame() }
        }
    }

    /// Runs one more server instance on `database`, at `port` (0: any free one), while `body` runs; shuts it down
    /// gracefully after.
    static func withInstance<T: Sendable>(database: String, port: Int, _ body: @Sendable (Int) async throws -> T) async throws -> T {
        let logger = TestPostgres.logger
        let client = PostgresClient(configuration: TestPostgres.configuration(database: database), backgroundLogger: logger)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try SyncServer.makeApplication(
            configuration: SyncServerConfiguration(host: "127.0.0.1", port: port),
            database: client, logger: logger
        ) { port in portContinuation.yield(port) }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: client), .init(service: app)], gracefulShutdownSignals: [],
                logger: logger))
        let running = Task { try await group.run() }
        var bound = 0
        for await port in ports {
            bound = port
            break
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(bound))
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try await running.value
        return try result.get()
    }
}
#endif
