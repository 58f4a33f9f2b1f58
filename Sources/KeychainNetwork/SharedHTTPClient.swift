#if Network
import AsyncHTTPClient
import NIOCore

extension HTTPClient {
    /// An HTTP client for a process to make once and keep (never shut down, like AsyncHTTPClient's own shared one),
    /// for the calls this project makes: to the sync server a person named, to the OCSP responder a certificate
    /// names.
    ///
    /// It follows no redirect: a signed sync request is signed for its path, and an OCSP question goes where the
    /// certificate says. It does not retry establishing a connection: a server that cannot be reached fails the call
    /// at once, and the caller decides what then (the sync service retries with its own backoff; revocation is left
    /// unchecked).
    package static func keychainShared(connectTimeout: TimeAmount, readTimeout: TimeAmount) -> HTTPClient {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: connectTimeout, read: readTimeout)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }
}
#endif
