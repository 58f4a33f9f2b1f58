import Foundation
import KeychainDBus
import Testing

/// KeychainDBus against a real dbus-daemon (a private bus per test).
@Suite(
    .enabled(if: Machine.hasDBusDaemon, "needs dbus-daemon (Debian package dbus-daemon) for a private bus"),
    .timeLimit(.minutes(10)))
struct DBusConnectionTests {
    @Test func listsNamesAndFindsItselfOnTheBus() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        #expect(connection.uniqueName.hasPrefix(":"))
        let names = try connection.listNames()
        #expect(names.contains("org.freedesktop.DBus"))
        #expect(names.contains(connection.uniqueName))
        #expect(try connection.nameOwner(of: connection.uniqueName) == connection.uniqueName)
    }

    @Test func aMissingNameIsTheBusErrorByName() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        let error = try #require(throws: DBusError.self) { try connection.nameOwner(of: "org.example.Nobody") }
        #expect(error.name == "org.freedesktop.DBus.Error.NameHasNoOwner")
        // Calling a service nobody provides (and the bus cannot start) is ServiceUnknown.
        let unknown = try #require(throws: DBusError.self) {
            try connection.call(destination: "org.example.Nobody", path: "/", interface: "org.example.Nobody", member: "Ping")
        }
        #expect(unknown.name == "org.freedesktop.DBus.Error.ServiceUnknown")
    }

    @Test func honoursDBUS_SYSTEM_BUS_ADDRESS() throws {
        let bus = try PrivateBus()
        let connection = try DBusConnection.systemBus(environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(connection.address == bus.address)
        #expect(try connection.listNames().contains(connection.uniqueName))
    }

    @Test func aBusThatIsNotThereFailsAtOnce() throws {
        let directory = try TemporaryDirectory()
        let start = ContinuousClock.now
        let error = try #require(throws: DBusError.self) {
            try DBusConnection(address: "unix:path=\(directory.path)/nothing", timeout: .seconds(2))
        }
        guard case .connectionFailed(_, let code) = error else {
            Issue.record("expected connectionFailed, got \(error)")
            return
        }
        #expect(code == ENOENT || code == ECONNREFUSED)
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func aSignalWaitEndsAtItsDeadline() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        let match = try connection.subscribe(sender: nil, path: "/org/example/Quiet", interface: "org.example.Quiet", member: "Never")
        let start = ContinuousClock.now
        let signal = try connection.nextSignal(from: match, until: start + .milliseconds(300))
        let elapsed = ContinuousClock.now - start
        #expect(signal == nil)
        #expect(elapsed >= .milliseconds(300))
        #expect(elapsed < .seconds(3))
    }

    @Test func signalsArriveWithTheirArgumentsFromTheSenderMatchedOnly() throws {
        let bus = try PrivateBus()
        let listener = try bus.connect()
        let sender = try bus.connect()
        let impostor = try bus.connect()
        let match = try listener.subscribe(
            sender: sender.uniqueName, path: "/org/example/Reader",
            interface: "org.example.Reader", member: "Status")
        // The impostor's signal, broadcast and sent directly to the listener, must not reach the match.
        try impostor.emitSignal(
            path: "/org/example/Reader", interface: "org.example.Reader", member: "Status",
            [.string("verify-match"), .bool(true)])
        try impostor.emitSignal(
            path: "/org/example/Reader", interface: "org.example.Reader", member: "Status",
            [.string("verify-match"), .bool(true)], destination: listener.uniqueName)
        try sender.emitSignal(
            path: "/org/example/Reader", interface: "org.example.Reader", member: "Status",
            [
                .string("verify-no-match"), .bool(true), .strings(["a", "b"]), .uint32(7),
                .objectPath("/org/example/Reader/0"),
            ])
        let signal = try #require(try listener.nextSignal(from: match, until: .now + .seconds(5)))
        #expect(signal.sender == sender.uniqueName)
        #expect(signal.member == "Status")
        #expect(
            signal.arguments == [
                .string("verify-no-match"), .bool(true), .strings(["a", "b"]), .uint32(7),
                .objectPath("/org/example/Reader/0"),
            ])
        #expect(try listener.nextSignal(from: match, until: .now + .milliseconds(200)) == nil)
    }

    @Test func aCallNobodyAnswersTimesOut() throws {
        let bus = try PrivateBus()
        let caller = try bus.connect()
        // This connection never reads its socket, so the call reaches it and is never answered.
        let silent = try bus.connect()
        let start = ContinuousClock.now
        let error = try #require(throws: DBusError.self) {
            try caller.call(
                destination: silent.uniqueName, path: "/org/example/Silent", interface: "org.example.Silent",
                member: "Wait", [.string("anything")], timeout: .milliseconds(300))
        }
        let elapsed = ContinuousClock.now - start
        guard case .timedOut = error else {
            Issue.record("expected timedOut, got \(error)")
            return
        }
        #expect(elapsed >= .milliseconds(300))
        #expect(elapsed < .seconds(3))
    }

    @Test func readsVariantsStructuresAndDictionaries() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        // GetConnectionCredentials answers a{sv}: UnixUserID among others.
        let reply = try connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "GetConnectionCredentials",
            [.string(connection.uniqueName)])
        guard case .array(let element, let entries)? = reply.first else {
            Issue.record("expected an array, got \(reply)")
            return
        }
        #expect(element == "{sv}")
        let user = entries.compactMap { entry -> UInt32? in
            guard case .dictEntry(.string("UnixUserID"), let value) = entry else { return nil }
            return value.uint32
        }
        #expect(user == [geteuid()])
    }

    @Test func refusesArgumentsItCannotSend() throws {
        let bus = try PrivateBus()
        let connection = try bus.connect()
        let refused = { (error: any Error) -> Bool in
            if case .invalidArgument? = error as? DBusError { return true }
            return false
        }
        #expect(performing: { try connection.nameOwner(of: "nul\u{0}byte") }, throws: refused)
        #expect(
            performing: {
                try connection.call(
                    destination: "org.freedesktop.DBus", path: "not a path", interface: "org.freedesktop.DBus",
                    member: "ListNames")
            }, throws: refused)
        #expect(
            performing: {
                try connection.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "GetNameOwner", [.array(elementSignature: "s", [.uint32(1)])])
            }, throws: refused)
    }
}
