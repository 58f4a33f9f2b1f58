import Foundation
import KeychainClient
import KeychainCore

extension KeychainStore {
    /// What a keychain says about itself, and, when keychaind serves it, how keychaind sees the caller.
    public struct Status: Sendable, Hashable {
        /// The keychain's folder.
        public let directory: String
        /// Whether the protected classes are available.
        public let lockStatus: LockStatus
        /// keychaind's view, when it serves the keychain; nil in-process.
        public let daemon: Daemon?

        /// keychaind's process and its view of the caller.
        public struct Daemon: Sendable, Hashable {
            /// keychaind's process ID.
            public let pid: Int32
            /// The caller as keychaind identified it from the kernel (program, pid, executable hash).
            public let caller: String
            /// Whether the caller is the `security` tool installed beside keychaind, which may manage the keychain.
            public let isAdminTool: Bool
            /// The access groups the caller may use (`*` for all); nil when keychaind could not work them out.
            public let accessGroups: [String]?
            /// Write transactions keychaind committed to this keychain since it started: each one fsync.
            public let commits: Int
            /// Writes those commits held. keychaind commits the writes that arrive while a commit is in flight
            /// together (group commit), so under concurrent writers `writes / commits` is the writes each fsync
            /// made durable.
            public let writes: Int
            /// How long keychaind's writer was busy committing those writes, during which no other write could
            /// commit: the write path's serial time. Divided by ``writes``, it is what each write holds the others
            /// back (the fsync shared by a commit's writes included).
            public let writerTime: Duration
        }

        init(_ status: ServiceStatus) {
            directory = status.home
            lockStatus = LockStatus(status.lockState)
            daemon = status.daemon.map {
                Daemon(
                    pid: $0.pid, caller: $0.caller, isAdminTool: $0.isAdminTool, accessGroups: $0.accessGroups,
                    commits: $0.transactions, writes: $0.writes, writerTime: .nanoseconds($0.writerNanoseconds))
            }
        }
    }

    /// The keychain's status.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/notAvailable` when keychaind does not answer.
    public func status() throws(KeychainError) -> Status {
        Status(try connection.status())
    }

    /// The status of the keychaind listening at `socket` (else where the environment expects one), as the
    /// `security` tool sees it.
    ///
    /// - Throws: `KeychainError` with `KeychainStatus/notAvailable` when nothing answers there, and
    ///   `KeychainStatus/wrongSecVersion` when it speaks another protocol version.
    public static func daemonStatus(socket: String) throws(KeychainError) -> Status {
        Status(try KeychainConnector.daemon(socket: socket, caller: .administrator(defaultGroup: AccessPolicy.currentExecutableName())).status())
    }

    /// The socket of the keychaind this process's keychain calls go to (the same rules every front end follows:
    /// `KEYCHAIN_DAEMON_SOCKET`, the system keychaind when installed, else the keychain's per-user keychaind); nil
    /// when they open the keychain in this process.
    public static var expectedDaemonSocket: String? { KeychainConnector.expectedDaemonSocket() }

    /// The keychaind this process's keychain calls go to, and why that one; nil when they open the keychain in this
    /// process.
    public static var expectedDaemon: ExpectedDaemon? {
        guard case .daemon(let socket, let kind, let autostart)? = try? KeychainConnector.environmentEndpoint() else { return nil }
        let mode =
            switch kind {
            case .named: "named by KEYCHAIN_DAEMON_SOCKET"
            case .system: "system (keychaind --system, serving every user)"
            case .perUser: autostart == nil ? "per-user" : "per-user (started on demand)"
            case .recorded: "per-user (named by keychaind.serves in the keychain's folder)"
            }
        return ExpectedDaemon(socket: socket, mode: mode, startsOnDemand: autostart != nil)
    }

    /// The keychaind a process's keychain calls go to (``expectedDaemon``).
    public struct ExpectedDaemon: Sendable, Hashable {
        /// Its socket.
        public let socket: String
        /// Which keychaind it is, in words: per-user (started on demand), system, or named by configuration.
        public let mode: String
        /// Whether the first keychain call starts it when it is not running.
        public let startsOnDemand: Bool
    }
}

extension KeychainStore.LockStatus {
    init(_ state: LockState) {
        switch state {
        case .noPasscode: self = .noPasscode
        case .beforeFirstUnlock: self = .beforeFirstUnlock
        case .unlocked: self = .unlocked
        case .locked: self = .locked
        }
    }
}
