#if Network
import AsyncHTTPClient
import KeychainCore
import NIOCore

/// OCSP questions sent over the process's shared HTTP client (``AsyncHTTPClient/HTTPClient/keychainShared(connectTimeout:readTimeout:)``):
/// what the programs built with the package's `Network` trait register with KeychainCore (``install()``), so that a
/// revocation policy that asks for OCSP reaches the certificate's responder.
package struct HTTPOCSPTransport: OCSPTransport {
    /// The HTTP client OCSP questions share.
    static let client = HTTPClient.keychainShared(connectTimeout: .seconds(5), readTimeout: .seconds(10))

    /// Makes this the process's OCSP transport (the first registration stays).
    package static func install() {
        OCSPCheck.register(HTTPOCSPTransport())
    }

    package func post(_ request: [UInt8], to uri: String, maximumAnswer: Int, timeout: Duration) async -> OCSPTransportOutcome {
        do {
            var question = HTTPClientRequest(url: uri)
            question.method = .POST
            question.headers.add(name: "Content-Type", value: "application/ocsp-request")
            question.headers.add(name: "Accept", value: "application/ocsp-response")
            question.body = .bytes(ByteBuffer(bytes: request))
            let answer = try await Self.client.execute(question, timeout: TimeAmount(timeout))
            guard answer.status == .ok else { return .failed("answered HTTP \(answer.status.code)") }
            let body = try await answer.body.collect(upTo: maximumAnswer)
            return .answer(Array(body.readableBytesView))
        } catch let error as NIOTooManyBytesError {
            return .failed("answered more than \(maximumAnswer / 1024) KiB (\(type(of: error)))")
        } catch {
            return .failed("could not be reached (\(Self.describe(error, timeout: timeout)))")
        }
    }

    /// The transport's error, which names no secret (OCSP carries none).
    static func describe(_ error: any Error, timeout: Duration) -> String {
        switch error {
        case let error as HTTPClientError: String(describing: error)
        case let error as IOError: String(describing: error)
        case is CancellationError: "it took longer than \(timeout.components.seconds) s"
        default: String(describing: type(of: error))
        }
    }
}
#endif
