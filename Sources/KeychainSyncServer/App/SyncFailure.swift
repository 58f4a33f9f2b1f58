#if Network
import Foundation
import HTTPTypes
import Hummingbird
import KeychainSyncAPI
import NIOCore
import OpenAPIRuntime

/// A request the server refuses, with the status, a machine-readable code and a message saying what to do.
///
/// Thrown from the middleware and from the API handlers; both Hummingbird and the OpenAPI runtime turn it into a
/// JSON `{error, message}` answer (the document's `Error` schema).
package struct SyncFailure: Error, Sendable, Equatable {
    /// The HTTP status of the answer.
    package var status: HTTPResponse.Status
    /// The machine-readable code (`error` in the body).
    package var code: String
    /// What went wrong and what to do (`message` in the body).
    package var message: String
    /// With `device_removed`: when the device was removed, in milliseconds since 1970 (`removed_at`).
    package var removedAtMillis: Int64?
    /// With `device_removed`: the device whose list removed it (`removed_by`).
    package var removedBy: String?
    /// With 429: how long until the client may try again (`Retry-After`, whole seconds rounded up).
    package var retryAfter: Duration?

    /// A failure with the given status, code and message.
    package init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// 400: the request breaks a rule or a limit.
    package static func badRequest(_ message: String) -> SyncFailure {
        SyncFailure(.badRequest, "bad_request", message)
    }

    /// 403: a pending device asked for something only trusted devices may do.
    package static let notTrusted = SyncFailure(
        .forbidden, "not_trusted",
        "This device is not trusted in the account yet: have a trusted device approve it, then try again."
    )

    /// 403: the device was removed from the account.
    package static let deviceRemoved = deviceRemoved(at: nil, by: nil)

    /// 403: the device was removed from the account, at `at` (milliseconds since 1970) by the list of device `by`.
    package static func deviceRemoved(at: Int64?, by: String?) -> SyncFailure {
        var failure = SyncFailure(
            .forbidden, "device_removed",
            "This device was removed from the account; it can no longer sync. Join again with a new device key."
        )
        failure.removedAtMillis = at
        failure.removedBy = by
        return failure
    }

    /// 429: too many requests of this kind; `Retry-After` says when to try again.
    package static func rateLimited(retryAfter: Duration, what: String) -> SyncFailure {
        let seconds = max(1, Int64((retryAfter / .seconds(1)).rounded(.up)))
        var failure = SyncFailure(
            .tooManyRequests, "rate_limited", "Too many requests of this kind \(what): try again in \(seconds) seconds (Retry-After).")
        failure.retryAfter = .seconds(seconds)
        return failure
    }

    /// 503: the database did not answer within the request timeout.
    package static let databaseAway = SyncFailure(
        .serviceUnavailable, "unavailable", "The server cannot reach its database right now: try again in a few seconds.")

    /// 404: no such account.
    package static let noSuchAccount = SyncFailure(
        .notFound, "no_such_account",
        "There is no account with this id: check the id, or create the account first."
    )

    /// 413: the body is over the route's limit.
    package static func bodyTooLarge(limit: Int) -> SyncFailure {
        SyncFailure(
            .contentTooLarge, "body_too_large",
            limit == 0
                ? "This request takes no body: send it without one."
                : "The request body is larger than this route takes (\(limit) bytes): send fewer or smaller records per request."
        )
    }

    /// The JSON body of the answer.
    package var jsonBody: [UInt8] {
        let body = Components.Schemas._Error(error: code, message: message, removedAt: removedAtMillis, removedBy: removedBy)
        return (try? JSONEncoder().encode(body)).map { Array($0) } ?? Array(#"{"error":"internal","message":""}"#.utf8)
    }
}

extension SyncFailure: HTTPResponseError {
    /// The headers of the answer.
    package var headers: HTTPFields {
        var fields: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { fields[.retryAfter] = String(retryAfter.components.seconds) }
        return fields
    }

    /// The Hummingbird response for this failure.
    package func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: jsonBody)))
    }
}

extension SyncFailure: HTTPResponseConvertible {
    /// The status of the answer, for the OpenAPI runtime.
    package var httpStatus: HTTPResponse.Status { status }
    /// The headers of the answer, for the OpenAPI runtime.
    package var httpHeaderFields: HTTPFields { headers }
    /// The body of the answer, for the OpenAPI runtime.
    package var httpBody: HTTPBody? { HTTPBody(jsonBody) }
}
#endif
