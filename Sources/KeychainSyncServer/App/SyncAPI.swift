#if Network
import Foundation
import KeychainSyncAPI
import Logging
import OpenAPIRuntime

/// The handlers of the operations in the OpenAPI document (`KeychainSyncAPI/openapi.yaml`).
///
/// The requests reach them authenticated: ``AuthenticatedDevice/current`` is the signer. Refusals are thrown as
/// ``SyncFailure``; answers with a body of their own (conflicts, resync) are returned as the operation's output.
/// Account operations are in `SyncAPI+Accounts.swift`, records in `SyncAPI+Records.swift`.
struct SyncAPI: APIProtocol {
    /// The storage.
    let store: SyncStore
    /// The server's metrics.
    let metrics: SyncMetrics
    /// Where handlers log.
    let logger: Logger
    /// The most bytes an account may store.
    var quotaBytes: Int64 = SyncLimits.defaultStorageQuotaBytes
    /// Who may create accounts.
    var accountCreation: AccountCreationPolicy = .open

    /// The signer of the request, checked to be a device of `account` in one of `states`.
    func device(of account: String, in states: Set<DeviceState>) throws(SyncFailure) -> AuthenticatedDevice {
        guard let device = AuthenticatedDevice.current, device.accountID == account, let state = device.state else {
            throw SyncFailure(.unauthorized, "unknown_device", "This device is not a member of the account: ask to join it first.")
        }
        guard states.contains(state) else {
            throw state == .removed ? SyncFailure.deviceRemoved : SyncFailure.notTrusted
        }
        return device
    }

    func getHealth(_ input: Operations.GetHealth.Input) async throws -> Operations.GetHealth.Output {
        // Never on the API's listener: the monitoring listener serves it (``MonitoringListener``).
        throw Self.onMonitoringListener
    }

    /// 404 for `/health` and `/metrics` on the API's listener.
    static let onMonitoringListener = SyncFailure(
        .notFound, "not_found", "This is served on the server's monitoring listener (--metrics-host, --metrics-port), not here.")

    /// Whether the database answers within 3 seconds (what `/health` says).
    static func databaseAnswers(_ store: SyncStore, logger: Logger) async -> Bool {
        do {
            try await withDeadline(.seconds(3)) { try await store.ping() }
            return true
        } catch {
            logger.error("Health check: the database does not answer", metadata: ["error": "\(type(of: error))"])
            return false
        }
    }

    func getMetrics(_ input: Operations.GetMetrics.Input) async throws -> Operations.GetMetrics.Output {
        // Never on the API's listener: the monitoring listener serves them (``MonitoringListener``).
        throw Self.onMonitoringListener
    }

    func getOpenAPIDocument(_ input: Operations.GetOpenAPIDocument.Input) async throws -> Operations.GetOpenAPIDocument.Output {
        .ok(.init(body: .yaml(HTTPBody(SyncAPIDocument.bytes))))
    }
}

/// The OpenAPI document, as built into the program.
package enum SyncAPIDocument {
    /// The YAML bytes of `openapi.yaml`.
    package static var bytes: [UInt8] { KeychainSyncAPI.openAPIDocument }
}

/// What ``withDeadline(_:_:)`` throws when the time passed.
struct DeadlinePassed: Error {}

/// Runs `body`, failing with ``DeadlinePassed`` when it takes longer than `timeout` (`body` is then cancelled).
func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw DeadlinePassed()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
#endif
