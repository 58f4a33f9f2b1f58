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
        }

        init(_ status: ServiceStatus) {
            directory = status.home
            lockStatus = LockStatus(status.lockState)
            daemon = status.daemon.map {
                Daemon(pid: $0.pid, caller: $0.caller, isAdminTool: $0.isAdminTool, accessGroups: $0.accessGroups,
                       commits: $0.transactions, writes: $0.writes)
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

    /// The socket keychaind is expected on: `KEYCHAIN_DAEMON_SOCKET` unless `off`, else
    /// `$XDG_RUNTIME_DIR/keychain/keychaind.sock`; nil when none can be named.
    public static var expectedDaemonSocket: String? { KeychainConnector.expectedDaemonSocket() }
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
