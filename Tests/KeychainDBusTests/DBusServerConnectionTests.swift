import Foundation
import KeychainDBus
import Synchronization
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// DBusServerConnection against a real dbus-daemon (a private session bus per test), called by DBusConnection, by
/// another DBusServerConnection and by busctl.
@Suite(
    .enabled(if: PrivateSessionBus.isAvailable, "needs dbus-daemon (Debian package dbus-daemon) for a private session bus"),
    .timeLimit(.minutes(10)))
struct DBusServerConnectionTests {
    /// The name the echo server owns, also its interface.
    static let name = "org.example.Echo"

    @Test func echoesArgumentsToTheClient() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus)
        let arguments: [DBusValue] = [
            .string("héllo"), .uint32(7), .int64(-3), .bool(true), .double(1.5), .objectPath("/a/b"), .bytes([0, 1, 255]),
            .array(elementSignature: "{sv}", [.dictEntry(.string("k"), .variant(.int32(4)))]),
            .structure([.uint16(2), .strings(["x", "y"])]), .bytes([]),
        ]
        let address = bus.address
        let (reply, described, clientName) = try await onThread {
            let client = try DBusConnection(address: address, timeout: .seconds(100))
            let reply = try client.call(
                destination: Self.name, path: "/org/example/Echo/item", interface: Self.name,
                member: "Echo", arguments)
            let described = try client.call(
                destination: Self.name, path: "/org/example/Echo/item", interface: Self.name,
                member: "Describe", arguments)
            return (reply, described, client.uniqueName)
        }
        #expect(reply == arguments)
        #expect(
            described == [
                .signature("suxbdoaya{sv}(qas)ay"), .string(clientName), .objectPath("/org/example/Echo/item"),
                .string(Self.name),
            ])
        _ = server
    }

    @Test func aHandlerOnTheBusThreadAnswersWhatItTakesAndPassesTheRestOn() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus)
        let threads = Mutex<Set<String>>([])
        server.connection.answerOnBusThread { call in
            threads.withLock { _ = $0.insert(Thread.current.name ?? "") }
            switch call.member {
            case "Quick": return .reply([.string("inline"), .string(call.sender)])
            case "QuickFail": return .error(name: "org.example.Error.Quick", message: "refused inline")
            default: return nil
            }
        }
        let address = bus.address
        let (quick, failed, echoed, clientName) = try await onThread {
            let client = try DBusConnection(address: address, timeout: .seconds(100))
            // Many calls through the same handler: each is answered from it, not from the stream.
            var quick: [DBusValue] = []
            for _ in 0..<200 {
                quick = try client.call(destination: Self.name, path: "/", interface: Self.name, member: "Quick")
            }
            let failed = Result { () throws(DBusError) in
                try client.call(destination: Self.name, path: "/", interface: Self.name, member: "QuickFail")
            }
            let echoed = try client.call(destination: Self.name, path: "/", interface: Self.name, member: "Echo", [.uint32(5)])
            return (quick, failed, echoed, client.uniqueName)
        }
        #expect(quick == [.string("inline"), .string(clientName)])
        #expect(failed.failureName == "org.example.Error.Quick")
        #expect(failed.failureMessage?.hasSuffix("refused inline") == true)
        #expect(echoed == [.uint32(5)])
        #expect(threads.withLock { $0 } == ["D-Bus server"])

        // Without the handler, the same call reaches the stream (the echo server does not know it).
        server.connection.answerOnBusThread(nil)
        let unknown = try await onThread {
            let client = try DBusConnection(address: address, timeout: .seconds(100))
            return Result { () throws(DBusError) in
                try client.call(destination: Self.name, path: "/", interface: Self.name, member: "Quick")
            }
        }
        #expect(unknown.failureName == "org.freedesktop.DBus.Error.UnknownMethod")
    }

    @Test func busctlCallsTheServerAndPingsIt() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus)
        let address = bus.address
        func busctl(_ arguments: [String]) async throws -> ProgramRun {
            try await onThread {
                try ProgramRun.run(
                    "/usr/bin/busctl", ["--address=\(address)", "--timeout=60"] + arguments,
                    environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"])
            }
        }
        let echoed = try await busctl(["call", Self.name, "/org/example/Echo", Self.name, "Echo", "sau", "hello", "3", "1", "2", "4294967295"])
        #expect(echoed.status == 0, "\(echoed.stderr)")
        #expect(echoed.stdout == "sau \"hello\" 3 1 2 4294967295\n")
        // org.freedesktop.DBus.Peer is sd-bus's to answer, on any path.
        let pinged = try await busctl(["call", Self.name, "/anywhere", "org.freedesktop.DBus.Peer", "Ping"])
        #expect(pinged.status == 0, "\(pinged.stderr)")
        #expect(pinged.stdout == "")
        let failed = try await busctl(["call", Self.name, "/org/example/Echo", Self.name, "Fail"])
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("refused on purpose"), "\(failed.stderr)")
        _ = server
    }

    @Test func anErrorReplyArrivesWithItsName() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus)
        let address = bus.address
        let (refused, invalid) = try await onThread { () -> (DBusError?, DBusError?) in
            let client = try DBusConnection(address: address, timeout: .seconds(100))
            func failure(_ member: String) -> DBusError? {
                do {
                    try client.call(destination: Self.name, path: "/", interface: Self.name, member: member)
                    return nil
                } catch {
                    return error
                }
            }
            return (failure("Fail"), failure("FailBadly"))
        }
        #expect(refused == .remote(name: "org.example.Error.Refused", message: "refused on purpose"))
        // An invalid error name would get the server disconnected by the bus: it is sent as Failed.
        #expect(invalid == .remote(name: "org.freedesktop.DBus.Error.Failed", message: "not a name"))
        _ = server
    }

    @Test func namesAreRefusedOrReplacedAsTheirOwnerAllows() async throws {
        let bus = try PrivateSessionBus()
        let holder = try DBusServerConnection(address: bus.address)
        let other = try DBusServerConnection(address: bus.address)
        #expect(try await holder.requestName("org.example.Held") == .primaryOwner)
        #expect(try await holder.requestName("org.example.Held") == .alreadyOwner)
        #expect(try await other.requestName("org.example.Held") == .exists)
        #expect(try await other.requestName("org.example.Held", replaceExisting: true) == .exists)

        #expect(try await holder.requestName("org.example.Replaceable", allowReplacement: true) == .primaryOwner)
        #expect(try await other.requestName("org.example.Replaceable") == .exists)
        #expect(try await other.requestName("org.example.Replaceable", replaceExisting: true) == .primaryOwner)
        var lost: DBusServerEvent?
        for await event in holder.events {
            lost = event
            break
        }
        #expect(lost == .nameLost("org.example.Replaceable"))
        let owner = try await other.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "GetNameOwner", [.string("org.example.Replaceable")])
        #expect(owner == [.string(other.uniqueName)])
        #expect(try await other.releaseName("org.example.Replaceable"))
        #expect(try await other.releaseName("org.example.Replaceable") == false)
    }

    @Test func credentialsAreOursFromTheBus() async throws {
        let bus = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus.address)
        let mine = try await server.credentials(of: server.uniqueName)
        #expect(mine.processID == UInt32(getpid()))
        #expect(mine.userID == getuid())
        if let descriptor = mine.processFD {
            // A pidfd's fdinfo names the process.
            let info = try String(contentsOfFile: "/proc/self/fdinfo/\(descriptor.rawValue)", encoding: .utf8)
            #expect(info.contains("Pid:\t\(getpid())"), "\(info)")
            #expect(fcntl(descriptor.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        }
        let error = await #expect(throws: DBusError.self) { try await server.credentials(of: ":1.999999") }
        #expect(error?.name == "org.freedesktop.DBus.Error.NameHasNoOwner")
    }

    @Test func aClientLeavingTheBusIsReported() async throws {
        let bus = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus.address)
        let address = bus.address
        // The connection closes when the thread's closure returns.
        let clientName = try await onThread { try DBusConnection(address: address).uniqueName }
        var departure: DBusNameOwnerChange?
        for await change in server.peerDepartures where change.name == clientName {
            departure = change
            break
        }
        #expect(departure == DBusNameOwnerChange(name: clientName, oldOwner: clientName, newOwner: ""))
    }

    @Test func callsOverTheSendersLimitAreRefused() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus)
        // Held calls wait for Release: a loaded machine (the whole suite runs in parallel) must not time them out.
        let client = try DBusServerConnection(address: bus.address, timeout: .seconds(120))
        let releaser = try DBusServerConnection(address: bus.address, timeout: .seconds(120))
        let perSender = server.connection.limits.maximumPendingCallsPerSender
        #expect(perSender == 64)
        var held = 0, limited = 0, other: [String] = []
        await withTaskGroup(of: Result<[DBusValue], DBusError>.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    do throws(DBusError) {
                        return .success(try await client.call(destination: Self.name, path: "/", interface: Self.name, member: "Hold"))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var released = false
            for await result in group {
                switch result {
                case .success(let values) where values == [.uint32(1)]: held += 1
                case .failure(let error) where error.name == "org.freedesktop.DBus.Error.LimitsExceeded": limited += 1
                default: other.append("\(result)")
                }
                // The calls over the limit are answered at once; the others wait for Release.
                if limited + other.count == 200 - perSender && !released {
                    released = true
                    do {
                        try await releaser.call(destination: Self.name, path: "/", interface: Self.name, member: "Release")
                    } catch {
                        other.append("Release: \(error)")
                    }
                }
            }
        }
        #expect(limited == 200 - perSender)
        #expect(held == perSender)
        #expect(other.isEmpty, "\(other)")
    }

    @Test func callsOverTheTotalLimitAreRefusedWhoeverSendsThem() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus, limits: DBusServerLimits(maximumPendingCallsPerSender: 64, maximumPendingCalls: 3))
        let first = try DBusServerConnection(address: bus.address)
        let second = try DBusServerConnection(address: bus.address)
        let third = try DBusServerConnection(address: bus.address)
        @Sendable func call(_ client: DBusServerConnection, _ member: String) async -> Result<[DBusValue], DBusError> {
            do throws(DBusError) {
                return .success(try await client.call(destination: Self.name, path: "/", interface: Self.name, member: member))
            } catch {
                return .failure(error)
            }
        }
        let held = [Task { await call(first, "Hold") }, Task { await call(first, "Hold") }, Task { await call(second, "Hold") }]
        for _ in 0..<500 where server.heldCount < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.heldCount == 3)
        // Three calls wait: a call from a third sender is refused at once.
        let answer = await call(third, "Echo")
        #expect(answer.failureName == "org.freedesktop.DBus.Error.LimitsExceeded")
        // Closing releases the held calls: the bus answers them NoReply.
        server.connection.close()
        for task in held {
            let result = await task.value
            #expect(result.failureName == "org.freedesktop.DBus.Error.NoReply", "\(result)")
        }
    }

    @Test func aCallNotAnsweredInTimeIsAnsweredFailed() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus, limits: DBusServerLimits(unansweredCallLifetime: .milliseconds(300)))
        let client = try DBusServerConnection(address: bus.address, timeout: .seconds(120))
        let start = ContinuousClock.now
        let error = await #expect(throws: DBusError.self) {
            try await client.call(destination: Self.name, path: "/", interface: Self.name, member: "Hold")
        }
        #expect(error == .remote(name: "org.freedesktop.DBus.Error.Failed", message: "the call was not answered in time"))
        // Answered by the server's own deadline (the message says so), long before the client's would have passed.
        #expect(ContinuousClock.now - start < .seconds(60))
        _ = server
    }

    @Test func hugeOrDeepArgumentsAreRefusedAndServingGoesOn() async throws {
        let bus = try PrivateSessionBus()
        let server = try await EchoServer(bus, limits: DBusServerLimits(reading: DBusReadLimits(maximumValues: 1_000_000, maximumDepth: 16)))
        let address = bus.address
        let results = try await onThread { () -> [Result<[DBusValue], DBusError>] in
            let client = try DBusConnection(address: address, timeout: .seconds(300))
            func echo(_ arguments: [DBusValue]) -> Result<[DBusValue], DBusError> {
                Result { () throws(DBusError) in
                    try client.call(destination: Self.name, path: "/", interface: Self.name, member: "Echo", arguments)
                }
            }
            var nested = DBusValue.int32(1)
            for _ in 0..<10 { nested = .variant(nested) }
            var deeper = DBusValue.int32(1)
            for _ in 0..<20 { deeper = .variant(deeper) }
            return [
                echo([.bytes([UInt8](repeating: 0x5a, count: 2_000_000))]),
                echo([.strings(Array(repeating: "x", count: 1_100_000))]),
                echo([nested]),
                echo([deeper]),
                echo([.string("still serving")]),
            ]
        }
        #expect(try results[0].get() == [.bytes([UInt8](repeating: 0x5a, count: 2_000_000))])
        #expect(results[1].failureName == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(results[1].failureMessage?.contains("too many values") == true, "\(results[1])")
        var nested = DBusValue.int32(1)
        for _ in 0..<10 { nested = .variant(nested) }
        #expect(try results[2].get() == [nested])
        #expect(results[3].failureName == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(results[3].failureMessage?.contains("nested too deeply") == true, "\(results[3])")
        #expect(try results[4].get() == [.string("still serving")])
        _ = server
    }

    @Test func aSignalReachesASubscriber() async throws {
        let bus = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus.address)
        let address = bus.address
        let signal = try await onThread { () -> DBusSignal? in
            let client = try DBusConnection(address: address)
            let match = try client.subscribe(sender: server.uniqueName, path: "/org/example/Echo", interface: Self.name, member: "Changed")
            server.emitSignal(path: "/org/example/Echo", interface: Self.name, member: "Changed", [.string("item"), .uint32(3)])
            return try client.nextSignal(from: match, until: .now + .seconds(10))
        }
        #expect(
            signal
                == DBusSignal(
                    sender: server.uniqueName, path: "/org/example/Echo", interface: Self.name, member: "Changed",
                    arguments: [.string("item"), .uint32(3)]))
        let error = await #expect(throws: DBusError.self) {
            try await server.sendSignal(path: "not a path", interface: Self.name, member: "Changed")
        }
        #expect(error.map { if case .invalidArgument = $0 { true } else { false } } == true)
    }

    @Test func aConsumerThatStopsTakingCallsGetsThemAnsweredFailed() async throws {
        let bus = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus.address)
        #expect(try await server.requestName(Self.name) == .primaryOwner)
        let consumer = Task { for await _ in server.calls {} }
        consumer.cancel()
        await consumer.value
        let address = bus.address
        let error = try await onThread { () -> DBusError? in
            let client = try DBusConnection(address: address)
            do throws(DBusError) {
                try client.call(destination: Self.name, path: "/", interface: Self.name, member: "Echo")
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.name == "org.freedesktop.DBus.Error.Failed")
    }

    @Test func closingFinishesTheStreamsAndLaterCallsThrow() async throws {
        let bus = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus.address)
        server.close()
        for await _ in server.calls {}
        for await _ in server.peerDepartures {}
        let error = await #expect(throws: DBusError.self) { try await server.requestName(Self.name) }
        #expect(error == .disconnected)
        server.close()
    }

    @Test func theBusGoingAwayIsAnEventAndEndsTheCalls() async throws {
        var bus: PrivateSessionBus? = try PrivateSessionBus()
        let server = try DBusServerConnection(address: bus?.address ?? "")
        bus = nil
        var last: DBusServerEvent?
        for await event in server.events { last = event }
        #expect(last == .disconnected)
        for await _ in server.calls {}
        let error = await #expect(throws: DBusError.self) { try await server.requestName(Self.name) }
        #expect(error == .disconnected)
    }

    @Test func aBusThatIsNotThereFailsTheInitializer() throws {
        let error = #expect(throws: DBusError.self) {
            try DBusServerConnection(address: "unix:path=/nonexistent/keychain-dbus-test", timeout: .seconds(2))
        }
        guard case .connectionFailed? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
    }
}

/// A server owning ``DBusServerConnectionTests/name`` that answers `Echo` with its arguments, `Describe` with the
/// call's signature, sender, path and interface, `Fail` with an error, `FailBadly` with an invalid error name,
/// holds `Hold` calls until `Release`, and answers anything else UnknownMethod.
/// Its calls are taken by a task on Swift's cooperative pool, which the suite's blocking tests may hold for seconds:
/// clients of it wait with long timeouts (the point of each test is the answer, not its speed).
final class EchoServer: Sendable {
    let connection: DBusServerConnection
    private let serving: Task<Void, Never>
    /// How many `Hold` calls wait, as the serving task counts them.
    private let counter: HeldCounter

    /// How many `Hold` calls wait now.
    var heldCount: Int { counter.value.withLock { $0 } }

    init(_ bus: PrivateSessionBus, limits: DBusServerLimits = DBusServerLimits()) async throws {
        let connection = try DBusServerConnection(address: bus.address, limits: limits)
        self.connection = connection
        let heldCounter = HeldCounter()
        self.counter = heldCounter
        serving = Task.detached {
            var held: [DBusMethodCall] = []
            for await call in connection.calls {
                switch call.member {
                case "Echo": connection.reply(to: call, call.arguments)
                case "Describe":
                    connection.reply(
                        to: call,
                        [
                            .signature(call.signature), .string(call.sender), .objectPath(call.path),
                            .string(call.interface ?? ""),
                        ])
                case "Fail": connection.replyError(to: call, name: "org.example.Error.Refused", message: "refused on purpose")
                case "FailBadly": connection.replyError(to: call, name: "not a name", message: "not a name")
                case "Hold":
                    held.append(call)
                    heldCounter.value.withLock { $0 = held.count }
                case "Release":
                    for waiting in held { connection.reply(to: waiting, [.uint32(1)]) }
                    held.removeAll()
                    heldCounter.value.withLock { $0 = 0 }
                    connection.reply(to: call)
                default:
                    connection.replyError(to: call, name: "org.freedesktop.DBus.Error.UnknownMethod", message: call.member)
                }
            }
        }
        guard try await connection.requestName(DBusServerConnectionTests.name) == .primaryOwner else {
            throw TestProcessError("\(DBusServerConnectionTests.name) is taken")
        }
    }

    deinit {
        serving.cancel()
        connection.close()
    }
}

/// A count the serving task updates and the test reads.
final class HeldCounter: Sendable {
    /// The count.
    let value = Mutex(0)
}

extension Result where Failure == DBusError {
    /// The D-Bus error name of a failure, nil for a success or a local failure.
    var failureName: String? {
        if case .failure(let error) = self { return error.name }
        return nil
    }

    /// The message of a failure, nil for a success.
    var failureMessage: String? {
        if case .failure(let error) = self { return error.message }
        return nil
    }
}
