import KeychainCore
import ServiceLifecycle

/// Runs the sync engine of each served keychain while keychaind serves it (``SyncEngines/run(engine:)``: a round at start
/// when the keychain is in an account, then on the server's push, after local writes and every poll interval), with
/// the same engine that answers `security sync`. In system mode a user's keychain starts syncing once it opens (at
/// the user's first connection), looked for every second as the idle lock does. Graceful shutdown cancels every
/// engine, which stops between steps it has recorded.
struct BackgroundSync: Service {
    let keychains: ServedKeychains

    func run() async throws {
        // A keychaind built without the sync client (no Network trait) has nothing to run.
        guard let engines = SyncEngineRegistry.current else { return }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                var started = Set<UInt32>()
                while !Task.isCancelled {
                    for keychain in keychains.open where started.insert(keychain.uid).inserted {
                        group.addTask { await engines.run(engine: keychain.engine) }
                    }
                    // The per-user keychaind's one keychain is open from the start; no other will open.
                    guard keychains.servesEveryUser else { break }
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}
