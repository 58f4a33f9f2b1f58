import Foundation
import KeychainCore
import Testing
@testable import KeychainClient

#if canImport(Glibc)
import Glibc
#endif

/// How a client picks its keychaind: from configuration, never from which socket answers (issue 30). The system
/// keychaind (`/run/keychain/keychaind.sock`, here a socket in a test folder) is used whenever it is installed, even
/// when it does not answer; else the keychain's per-user keychaind, started on demand.
struct SystemSocketChoiceTests {
    /// A socket file at `path` that nothing accepts on (bound, never listening): an installed keychaind that is busy
    /// or stopped.
    func silentSocket(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = try DaemonSocketAddress.make(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        return fd
    }

    @Test func theSystemKeychaindIsUsedWheneverItIsInstalled() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sys-choice-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/runtime/keychain", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let system = folder + "/system.sock"
        let fd = try silentSocket(system)
        defer { close(fd) }
        let environment = ["XDG_RUNTIME_DIR": folder + "/runtime", "HOME": folder]
        let keychaind = "/usr/local/bin/keychaind"

        // Installed, though nothing answers: still the system keychaind, never the per-user one or the files.
        #expect(
            try KeychainEndpoint.resolve(environment, systemSocket: system, daemonProgram: keychaind)
                == .daemon(socket: system, kind: .system, autostart: nil))
        // KEYCHAIN_DAEMON_SOCKET still decides, and `off` means the keychain in this process.
        var named = environment
        named["KEYCHAIN_DAEMON_SOCKET"] = "/elsewhere.sock"
        #expect(
            try KeychainEndpoint.resolve(named, systemSocket: system, daemonProgram: keychaind)
                == .daemon(socket: "/elsewhere.sock", kind: .named, autostart: nil))
        named["KEYCHAIN_DAEMON_SOCKET"] = "off"
        #expect(
            try KeychainEndpoint.resolve(named, systemSocket: system, daemonProgram: keychaind)
                == .inProcess(KeychainLocation(home: folder + "/.local/share/keychain")))
        // A KEYCHAIN_HOME names another keychain than the one the system keychaind serves: its own per-user keychaind,
        // its socket in the keychain's folder.
        var home = environment
        home["KEYCHAIN_HOME"] = folder + "/other"
        #expect(
            try KeychainEndpoint.resolve(home, systemSocket: system, daemonProgram: keychaind)
                == .daemon(
                    socket: folder + "/other/run/keychaind.sock", kind: .perUser,
                    autostart: DaemonAutostart(program: keychaind, socket: folder + "/other/run/keychaind.sock", home: folder + "/other")))
    }

    @Test func withoutTheSystemKeychaindTheDefaultKeychainsOwnKeychaindIsStartedOnDemand() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sys-choice-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keychaind = "/usr/local/bin/keychaind"
        // A regular file where the system socket would be is not a system keychaind.
        #expect(FileManager.default.createFile(atPath: folder + "/system.sock", contents: nil))
        let environment = ["XDG_RUNTIME_DIR": folder + "/runtime", "HOME": folder]
        let socket = folder + "/runtime/keychain/keychaind.sock"
        #expect(
            try KeychainEndpoint.resolve(environment, systemSocket: folder + "/system.sock", daemonProgram: keychaind)
                == .daemon(
                    socket: socket, kind: .perUser,
                    autostart: DaemonAutostart(program: keychaind, socket: socket, home: folder + "/.local/share/keychain")))
        // Without a runtime folder, the socket goes in a private folder of the keychain's.
        #expect(
            try KeychainEndpoint.resolve(["HOME": folder], systemSocket: folder + "/none.sock", daemonProgram: keychaind).socket
                == folder + "/.local/share/keychain/run/keychaind.sock")
    }
}

/// A Unix socket address for a test socket.
enum DaemonSocketAddress {
    static func make(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
