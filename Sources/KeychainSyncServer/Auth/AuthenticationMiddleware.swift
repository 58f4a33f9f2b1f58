#if Network
import Foundation
import KeychainSyncAPI
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Verifies every request's signature before any route sees it, and tells the routes which device signed.
///
/// What it can check from the headers comes first, before a byte of the body is read: the route's body limit
/// (``SyncLimits/bodyLimit(method:path:)``, from `Content-Length`: 413), the signature headers (401), and, for a
/// device the server knows, the signature itself over the body hash the client states in
/// `Keychain-Content-SHA256`, the clock skew and the nonce (in PostgreSQL, so a replay to another instance fails
/// too). Only then is the body read, up to the route's limit, and checked against the stated hash. A client that
/// states no hash, and the two routes whose key is in the body (account creation, join requests), have their body
/// read first, up to the route's limit. Removed devices are refused after their signature verified. The device is
/// then in ``SyncRequestContext/device`` and, for the OpenAPI handlers, in ``AuthenticatedDevice/current``.
package struct AuthenticationMiddleware: RouterMiddleware {
    /// The context of the sync routers.
    package typealias Context = SyncRequestContext

    /// Where devices and nonces are.
    let store: SyncStore
    /// The rate limits, counted per source address before anything else and per account once verified.
    let limits: RequestLimits
    /// The header that carries the client's address behind a proxy (nil: the peer's address).
    let clientAddressHeader: HTTPField.Name?
    /// How long the database may take, for the lookups here and for the handler after.
    let requestTimeout: Duration
    /// The current Unix time in seconds (a parameter for the tests of skew).
    let now: @Sendable () -> Int64

    /// A middleware on a store, reading the system clock.
    package init(
        store: SyncStore, limits: RequestLimits = RequestLimits(SyncRateLimits()), clientAddressHeader: String? = nil,
        requestTimeout: Duration = .seconds(SyncLimits.defaultRequestTimeoutSeconds),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.store = store
        self.requestTimeout = requestTimeout
        self.limits = limits
        self.clientAddressHeader = clientAddressHeader.flatMap { HTTPField.Name($0) }
        self.now = now
    }

    /// Where the request comes from: the last address in the proxy's header when one is configured and present,
    /// else the connection's peer.
    func clientAddress(_ request: Request, context: Context) -> String {
        if let clientAddressHeader, let value = request.headers[clientAddressHeader],
            let last = value.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty
        {
            return String(last.prefix(64))
        }
        return context.peerAddress
    }

    /// The paths anyone may read without a signature (`/health` and `/metrics` answer 404 here: they are on the
    /// monitoring listener).
    static let openPaths: Set<String> = ["/health", "/metrics", "/openapi.yaml"]

    /// Authenticates the request, then hands it on.
    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if request.method == .get && Self.openPaths.contains(request.uri.path) {
            return try await next(request, context)
        }
        // The signature's time is weighed against when the request began to arrive, not when its body finished:
        // a large batch on a slow link (or a busy client streaming its body) is not turned away as stale.
        let arrived = now()
        let kind = LimitedRequest(method: request.method, path: request.uri.path)
        if let kind { try limits.checkAddress(kind, address: clientAddress(request, context: context)) }
        let limit = SyncLimits.bodyLimit(method: request.method.rawValue, path: request.uri.path)
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw SyncFailure.bodyTooLarge(limit: limit)
        }
        var request = request
        let (device, body) = try await authenticate(&request, limit: limit, arrived: arrived)
        if let kind { try limits.checkAccount(kind) }
        var context = context
        context.device = device
        // The handlers read the body that was checked.
        request.body = .init(buffer: body)
        // The handlers answer within the timeout too (``RequestErrorMiddleware``).
        return try await AuthenticatedDevice.$current.withValue(device) {
            try await next(request, context)
        }
    }

    /// `body`'s result, or 503 when it takes longer than `timeout` (the database does not answer).
    func answering<T: Sendable>(within timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withDeadline(timeout, body)
        } catch is DeadlinePassed {
            throw SyncFailure.databaseAway
        }
    }

    /// The request's body, at most `limit` bytes (413 past it).
    private func body(of request: inout Request, limit: Int) async throws -> ByteBuffer {
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw SyncFailure.bodyTooLarge(limit: limit)
        }
    }

    private func authenticate(_ request: inout Request, limit: Int, arrived: Int64) async throws -> (AuthenticatedDevice, ByteBuffer) {
        func header(_ name: String) throws -> String {
            guard let field = HTTPField.Name(name), let value = request.headers[field], !value.isEmpty else {
                throw SyncFailure(
                    .unauthorized, "missing_signature",
                    "The request has no \(name) header: sign every request with the device key (see the API document's description)."
                )
            }
            return value
        }
        let deviceID = try header(RequestSignature.deviceHeader)
        let timestampText = try header(RequestSignature.timestampHeader)
        let nonce = try header(RequestSignature.nonceHeader)
        let signatureText = try header(RequestSignature.signatureHeader)
        guard DeviceIdentity.isWellFormed(deviceID) else {
            throw SyncFailure(.unauthorized, "bad_device_id", "Keychain-Device must be 32 lowercase hex characters (the device id).")
        }
        guard let timestamp = Int64(timestampText) else {
            throw SyncFailure(.unauthorized, "bad_timestamp", "Keychain-Timestamp must be whole Unix seconds in decimal.")
        }
        // Any Int64 may come: the difference is taken without overflowing.
        let (skew, overflowed) = arrived.subtractingReportingOverflow(timestamp)
        guard !overflowed, skew.magnitude <= RequestSignature.maximumClockSkew.magnitude else {
            throw SyncFailure(
                .unauthorized, "clock_skew",
                "The request's timestamp is \(overflowed ? "far" : "\(skew.magnitude) seconds") \(timestamp < arrived ? "behind" : "ahead of") the server's clock (at most \(RequestSignature.maximumClockSkew) seconds allowed): correct the device's clock and sign again."
            )
        }
        guard RequestSignature.isWellFormedNonce(nonce) else {
            throw SyncFailure(.unauthorized, "bad_nonce", "Keychain-Nonce must be 16 to 64 base64url characters without padding.")
        }
        guard let signature = Data(base64Encoded: signatureText) else {
            throw SyncFailure(.unauthorized, "bad_signature", "Keychain-Signature must be standard base64.")
        }
        var statedHash: String?
        if let field = HTTPField.Name(RequestSignature.contentHashHeader), let value = request.headers[field] {
            guard RequestSignature.isWellFormedHash(value) else {
                throw SyncFailure(.unauthorized, "bad_content_hash", "Keychain-Content-SHA256 must be the lowercase hex SHA-256 of the body (64 characters).")
            }
            statedHash = value
        }

        let path = request.uri.path
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "v1", "accounts", account, ...
        let account = segments.count >= 4 && segments[1] == "v1" && segments[2] == "accounts" ? String(segments[3]) : ""
        let keyInBody =
            request.method == .post
            && (path == "/v1/accounts" || (segments.count == 5 && segments[1] == "v1" && segments[2] == "accounts" && segments[4] == "joins"))
        let pathWithQuery = request.head.path ?? path

        var device = AuthenticatedDevice(accountID: account, deviceID: deviceID, signingKey: [], state: nil)
        var removal: (at: Int64?, by: String?) = (nil, nil)
        var body: ByteBuffer?
        if keyInBody {
            let read = try await self.body(of: &request, limit: limit)
            body = read
            guard let key = Self.signingKeyInBody(read) else {
                throw SyncFailure(
                    .badRequest, "bad_request",
                    "The body must be JSON with device.signing_key, the device's raw 32-byte Ed25519 public key in base64."
                )
            }
            guard DeviceIdentity.deviceID(signingKey: key) == deviceID else {
                throw SyncFailure(
                    .unauthorized, "device_key_mismatch",
                    "Keychain-Device is not the id of device.signing_key: send the hex of the first 16 bytes of SHA-256 over the raw key."
                )
            }
            device.signingKey = key
            if !account.isEmpty, let known = try await answering(within: requestTimeout, { [store] in try await store.credentials(account: account, device: deviceID) }) {
                device.state = known.state
                removal = (known.removedAtMillis, known.removedBy)
            }
        } else {
            guard !account.isEmpty,
                let known = try await answering(within: requestTimeout, { [store] in try await store.credentials(account: account, device: deviceID) })
            else {
                throw SyncFailure(
                    .unauthorized, "unknown_device",
                    "This device is not a member of the account (or its join request lapsed): ask to join the account first."
                )
            }
            device.signingKey = known.signingKey
            device.state = known.state
            removal = (known.removedAtMillis, known.removedBy)
        }

        // With a stated hash the signature is checked before the body is read; without one, over the body read.
        if statedHash == nil, body == nil { body = try await self.body(of: &request, limit: limit) }
        let message = RequestSignature.canonicalString(
            method: request.method.rawValue, pathWithQuery: pathWithQuery,
            bodyHash: statedHash ?? RequestSignature.bodyHash(body?.readableBytesView ?? ByteBuffer().readableBytesView),
            timestamp: timestampText, nonce: nonce
        )
        guard DeviceIdentity.verify(signature: signature, of: message, signingKey: device.signingKey) else {
            throw SyncFailure(
                .unauthorized, "bad_signature",
                "The signature does not verify with this device's key: sign the canonical string described in the API document."
            )
        }
        guard try await answering(within: requestTimeout, { [store] in try await store.recordNonce(device: deviceID, nonce: nonce) }) else {
            throw SyncFailure(
                .unauthorized, "replayed_request",
                "This nonce was already used by this device (a replayed request): sign again with a fresh random nonce."
            )
        }
        if device.state == .removed { throw SyncFailure.deviceRemoved(at: removal.at, by: removal.by) }
        let checked: ByteBuffer
        if let body { checked = body } else { checked = try await self.body(of: &request, limit: limit) }
        if let statedHash, RequestSignature.bodyHash(checked.readableBytesView) != statedHash {
            throw SyncFailure(
                .badRequest, "content_hash_mismatch",
                "The body is not the one Keychain-Content-SHA256 names (it changed on the way, or was cut): send it again."
            )
        }
        return (device, checked)
    }

    private struct KeyProbe: Decodable {
        struct Device: Decodable {
            var signingKey: String

            enum CodingKeys: String, CodingKey {
                case signingKey = "signing_key"
            }
        }
        var device: Device
    }

    /// The `device.signing_key` of a JSON body, when it is 32 bytes of base64.
    static func signingKeyInBody(_ body: ByteBuffer) -> [UInt8]? {
        guard let probe = try? JSONDecoder().decode(KeyProbe.self, from: Data(body.readableBytesView)),
            let key = Data(base64Encoded: probe.device.signingKey), key.count == DeviceIdentity.publicKeyLength
        else { return nil }
        return Array(key)
    }
}
#endif
