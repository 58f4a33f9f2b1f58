import Foundation

/// What a keychain says about itself: where it lives, whether it is locked, and, when keychaind serves it, how
/// the daemon sees the caller (what `security daemon status` prints).
package struct ServiceStatus: Sendable, Hashable {
    /// The keychain's folder (`KEYCHAIN_HOME` of whoever opened it).
    package var home: String
    /// Whether the protected classes are available.
    package var lockState: LockState
    /// keychaind's view, when the keychain is served by it; nil in-process.
    package var daemon: DaemonDetails?

    package init(home: String, lockState: LockState, daemon: DaemonDetails? = nil) {
        self.home = home
        self.lockState = lockState
        self.daemon = daemon
    }

    /// keychaind's process, and the caller as keychaind identified it from the kernel.
    package struct DaemonDetails: Sendable, Hashable {
        /// keychaind's process ID.
        package var pid: Int32
        /// The caller, as keychaind identified it (program, pid, executable hash).
        package var caller: String
        /// Whether the caller is the `security` tool installed beside keychaind, which may manage the keychain.
        package var isAdminTool: Bool
        /// The access groups the caller may use (`*` for every group); nil when they cannot be worked out.
        package var accessGroups: [String]?
        /// Write transactions committed since keychaind started.
        package var transactions: Int
        /// Writes those transactions held (group commit puts several in one).
        package var writes: Int
        /// How long the writer was busy committing them (no other write commits meanwhile), in nanoseconds.
        package var writerNanoseconds: Int

        package init(
            pid: Int32, caller: String, isAdminTool: Bool, accessGroups: [String]?, transactions: Int, writes: Int,
            writerNanoseconds: Int = 0
        ) {
            self.pid = pid
            self.caller = caller
            self.isAdminTool = isAdminTool
            self.accessGroups = accessGroups
            self.transactions = transactions
            self.writes = writes
            self.writerNanoseconds = writerNanoseconds
        }
    }
}
