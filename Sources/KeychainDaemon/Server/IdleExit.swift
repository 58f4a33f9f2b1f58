import Foundation
import KeychainCore
import KeychainProtocol
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Ends a keychaind that a client started on demand (`--exit-when-idle`) once it has had no connection for
/// ``idleFor`` and holds nothing a later client would miss: no keychain it serves is unlocked with a passcode (an
/// unlock lasts until the keychain locks, for every program), and none has a sync account (it pushes and pulls in
/// the background). Without a passcode nothing is lost: the next client starts keychaind again.
///
/// Before it goes, it takes the lock that clients starting a keychaind take turns on (and keeps it until the process
/// ends) and removes its socket, so a client either reached it before, or starts a new one after it is gone.
struct IdleExit: Service {
    let idleFor: Duration
    let tracker: ConnectionTracker
    let keychains: ServedKeychains
    let socket: String
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: min(.seconds(1), idleFor))
                guard let idle = tracker.idleFor, idle >= idleFor, !holdsState() else { continue }
                guard takeAutostartLock() else { continue }
                // A client may have connected between the look and the lock.
                guard tracker.idleFor != nil else { continue }
                unlink(socket)
                logger.notice("exiting: idle with nothing unlocked", metadata: ["idle": "\(idle)"])
                return
            }
        }
    }

    /// Whether a keychain is unlocked with a passcode, or syncs.
    func holdsState() -> Bool {
        keychains.open.contains { served in
            SyncEngineRegistry.current?.hasAccount(engine: served.engine) == true || ([served.engine] + served.engine.openKeychains).contains { $0.lockState == .unlocked }
        }
    }

    /// Takes the autostart lock without waiting, and keeps its descriptor open for the rest of the process (the lock
    /// goes with it). False when a client holds it now (it is starting or reaching this keychaind).
    private func takeAutostartLock() -> Bool {
        let path = DaemonSocket.autostartLockPath(forSocket: socket)
        guard let fd = try? FileSystem.openOwnFile(path, flags: O_RDONLY) else { return true }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return false
        }
        return true
    }
}
