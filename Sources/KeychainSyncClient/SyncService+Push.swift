#if Network
import Foundation
import KeychainCore
import HummingbirdWSClient
import NIOPosix

extension SyncService {
    /// The largest push message read (the server's are a few dozen bytes: `{"zone":"keychain","seq":12}`).
    static let maximumPushMessage = 4096
    /// The longest wait between two attempts to open the push connection.
    static let longestPushRetry = Duration.seconds(60)
    /// How long a push connection must have stayed open for the next attempt to start from the shortest delay.
    static let steadyPushConnection = Duration.seconds(10)

    /// Keeps the push connection open while in an account: every message from the server asks for a round, and so
    /// does every (re)connection (to catch up on what was missed). Reconnects after 1 s doubling up to 60 s (from
    /// 1 s again after a connection that held 10 s), each wait between half and all of that at random so that
    /// devices do not all come back at once.
    func pushLoop() async {
        var attempt = 0
        while !Task.isCancelled {
            // A device removed from its account stops asking: the server refuses it for good.
            guard let session = try? sessionIfAny(), isSyncing(session) else {
                await accountWakeup.wait(until: .now + pollInterval)
                continue
            }
            let opened = ContinuousClock.now
            let connected = await listenForPush(session)
            if Task.isCancelled { return }
            // A socket that stayed open a while starts the delays again; one closed at once (or never opened) does not.
            attempt = connected && ContinuousClock.now - opened >= Self.steadyPushConnection ? 1 : attempt + 1
            await accountWakeup.wait(until: .now + Self.pushRetryDelay(attempt: attempt))
        }
    }

    /// The wait before attempt `attempt` + 1: up to 1 s × 2^(attempt−1), capped, at least half of it.
    static func pushRetryDelay(attempt: Int) -> Duration {
        let cap = Double(longestPushRetry.components.seconds)
        let full = min(cap, pow(2, Double(max(0, attempt - 1))))
        return .milliseconds(Int64(Double.random(in: (full / 2)...full) * 1000))
    }

    /// Opens the push socket and listens until it closes or fails; returns whether it opened.
    func listenForPush(_ session: SyncSession) async -> Bool {
        // Each connection runs on an event loop of its own, shut down when it ends: that closes its socket
        // whatever happened, even after a refused upgrade, which the WebSocket client leaves open (half-closed
        // by the server, and never read again).
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let (url, path) = try Self.pushAddress(session)
            let fields = try SyncRequestSigner.signatureFields(method: "GET", pathWithQuery: path, body: [], keys: session.server.keys, now: now())
            let configuration = WebSocketClientConfiguration(
                maxFrameSize: Self.maximumPushMessage, additionalHeaders: fields,
                closeTimeout: .seconds(2), autoPing: .enabled(timePeriod: .seconds(30)))
            try await WebSocketClient.connect(url: url, configuration: configuration, eventLoopGroup: loop, logger: logger) { inbound, _, _ in
                self.setPush(connected: true)
                self.roundWakeup.signal()
                for try await _ in inbound.messages(maxSize: Self.maximumPushMessage) {
                    self.roundWakeup.signal()
                }
            }
        } catch {
            logger.debug("the sync push connection failed", metadata: ["error": "\(error)"])
            // The server answered and refused: a round learns why (a removed device then stops asking).
            if let refusal = error as? WebSocketClientError, refusal == .webSocketUpgradeFailed { roundWakeup.signal() }
        }
        try? await loop.shutdownGracefully()
        // Only this loop opens and closes it: connected now means it opened.
        let wasOpen = state.withLock { $0.pushConnected }
        if wasOpen { setPush(connected: false) }
        return wasOpen
    }

    private func setPush(connected: Bool) {
        state.withLock { $0.pushConnected = connected }
        emit(.push(connected: connected))
    }

    /// The push socket's URL and the path it is signed with (`/v1/accounts/{account}/push` after the server
    /// address's own path).
    static func pushAddress(_ session: SyncSession) throws(KeychainError) -> (url: String, path: String) {
        let base = session.serverURL.path.hasSuffix("/") ? String(session.serverURL.path.dropLast()) : session.serverURL.path
        guard let account = session.account.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))),
            var components = URLComponents(url: session.serverURL, resolvingAgainstBaseURL: false)
        else {
            throw KeychainError(
                code: .invalidParameter,
                message: "The sync server's address \(session.serverURL.absoluteString.prefix(200)) cannot carry a push connection; join again with an https://host[:port] address.")
        }
        let path = base + "/v1/accounts/\(account)/push"
        components.percentEncodedPath = path
        guard let url = components.string else {
            throw KeychainError(
                code: .invalidParameter,
                message: "The sync server's address \(session.serverURL.absoluteString.prefix(200)) cannot carry a push connection; join again with an https://host[:port] address.")
        }
        return (url, path)
    }
}
#endif
