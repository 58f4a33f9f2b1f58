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

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        do {
            return try await next(request, body, metadata)
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
