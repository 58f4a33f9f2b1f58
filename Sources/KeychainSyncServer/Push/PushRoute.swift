#if Network
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging

/// The WebSocket route `GET /v1/accounts/{account}/push`: trusted devices only, signed like any request (the
/// authentication middleware runs on the upgrade request), bounded by ``PushHub``.
enum PushRoute {
    /// The route's path pattern.
    static let path: RouterPath = "/v1/accounts/:account/push"

    /// Adds the route to the WebSocket router.
    static func add(to router: Router<SyncRequestContext>, hub: PushHub, metrics: SyncMetrics) {
        router.ws(path) { request, context in
            let account = context.parameters.get("account") ?? ""
            guard let device = context.device, device.accountID == account, device.state == .trusted else {
                throw SyncFailure.notTrusted
            }
            guard hub.isListening else {
                throw SyncFailure(
                    .serviceUnavailable, "push_unavailable", "The server cannot hear the database's notifications right now: retry in a few seconds."
                )
            }
            guard hub.hasRoom(for: account) else {
                throw SyncFailure(
                    .tooManyRequests, "too_many_sockets", "Too many push sockets are open for this account or this server: close unused ones."
                )
            }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let account = context.requestContext.parameters.get("account") ?? ""
            let device = context.requestContext.device?.deviceID ?? ""
            guard let subscription = hub.subscribe(account: account, device: device) else {
                try await outbound.close(.policyViolation, reason: "too many push sockets")
                return
            }
            metrics.socketsChanged(by: 1)
            defer {
                hub.unsubscribe(account: account, id: subscription.id)
                metrics.socketsChanged(by: -1)
            }
            let removed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    // Read until the client closes; clients have nothing to say.
                    for try await _ in inbound {}
                    return false
                }
                group.addTask {
                    for await delivery in subscription.deliveries {
                        switch delivery {
                        case .frame(let frame): try await outbound.write(.text(frame))
                        case .removed: return true
                        }
                    }
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            if removed {
                try await outbound.close(.policyViolation, reason: "device removed from the account")
            }
        }
    }
}
#endif
