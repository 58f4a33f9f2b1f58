#if Network
import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Turns what the OpenAPI handlers throw into answers: a ``SyncFailure`` into its JSON error, a body or parameter
/// the generated code could not decode into 400 saying so, anything else into 500 (logged, with no detail sent).
struct RequestErrorMiddleware: ServerMiddleware {
    /// Where unexpected errors are logged.
    let logger: Logger
    /// How long a handler may take (waiting on the database) before the request answers 503.
    var timeout: Duration = .seconds(SyncLimits.defaultRequestTimeoutSeconds)

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        do {
            // The handler runs in the deadline's child task while this one only waits for it (a task group waits for
            // its children, so `next` never outlives this call): it is called once, from that task alone, never
            // concurrently, though the runtime does not declare the closure Sendable.
            return try await withoutActuallyEscaping(next) { next in
                nonisolated(unsafe) let handler = next
                return try await withDeadline(timeout) { try await handler(request, body, metadata) }
            }
        } catch is DeadlinePassed {
            logger.error("A request found no database within the request timeout", metadata: ["operation": "\(operationID)"])
            let failure = SyncFailure.databaseAway
            return (HTTPResponse(status: failure.status, headerFields: failure.headers), failure.httpBody)
        } catch let error as ServerError {
            if let failure = error.underlyingError as? SyncFailure {
                return (HTTPResponse(status: failure.status, headerFields: failure.headers), failure.httpBody)
            }
            if error.operationInput == nil {
                let failure = SyncFailure.badRequest(
                    "The request does not match the API document for \(operationID) (\(error.causeDescription)): check the body's JSON and the parameters."
                )
                return (HTTPResponse(status: failure.status, headerFields: failure.headers), failure.httpBody)
            }
            logger.error("Request failed", metadata: ["operation": "\(operationID)", "error": "\(type(of: error.underlyingError))"])
            let failure = SyncFailure(.internalServerError, "internal", "The server failed to handle the request: try again later.")
            return (HTTPResponse(status: failure.status, headerFields: failure.headers), failure.httpBody)
        }
    }
}
#endif
