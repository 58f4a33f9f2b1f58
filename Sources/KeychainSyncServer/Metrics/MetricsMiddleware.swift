#if Network
import HTTPTypes
import Hummingbird
import Logging

/// Counts and times every request by route pattern and status, and logs one line per request with its id, route,
/// status, duration and the account's first 8 characters (never a body, nonce or signature).
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = SyncRequestContext

    /// Where the counts go.
    let metrics: SyncMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let status: Int
        let response: Response
        do {
            response = try await next(request, context)
            status = response.status.code
        } catch let error as any HTTPResponseError {
            observe(request, context: context, status: error.status.code, start: start)
            throw error
        } catch {
            observe(request, context: context, status: 500, start: start)
            throw error
        }
        observe(request, context: context, status: status, start: start)
        return response
    }

    private func observe(_ request: Request, context: Context, status: Int, start: ContinuousClock.Instant) {
        let duration = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, status: status, duration: duration)
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(status)",
            "ms": "\(duration.nanoseconds / 1_000_000)",
        ]
        let segments = request.uri.path.split(separator: "/")
        if segments.count >= 3, segments[0] == "v1", segments[1] == "accounts" {
            metadata["account"] = "\(segments[2].prefix(8))"
        }
        context.logger.log(level: status >= 500 ? .error : .info, "Request", metadata: metadata)
    }
}
#endif
