#if Network
import Foundation
import NIOSSL
import PostgresNIO

/// Where the server's PostgreSQL is and how to log in, from a libpq-style URL or a Unix socket folder.
package enum DatabaseAddress {
    /// A refused address, with what to fix.
    package struct Invalid: Error, CustomStringConvertible {
        /// What is wrong and what to do.
        package var description: String
    }

    /// A client configuration from a URL such as `postgres://user:password@host:5432/database?sslmode=require`.
    ///
    /// `sslmode` has libpq's meanings: `disable` (the default), `prefer` and `require` encrypt without checking
    /// who answers (`require` with `sslrootcert` checks the chain, as libpq's does); `verify-ca` checks that the
    /// server's certificate chains to `sslrootcert` (a PEM file, for a private CA) or else the system's roots;
    /// `verify-full` checks that and that it names the host. A `host` query item naming a folder (libpq's form for
    /// Unix sockets, as in `postgres:///db?host=/run/postgresql`) connects through that folder's socket, at `port`
    /// (5432 by default). The password may instead come from `PGPASSWORD`, which keeps it off the command line.
    /// - Parameters:
    ///   - url: The URL.
    ///   - environment: The process environment (for `PGPASSWORD`, `PGUSER`).
    package static func configuration(
        url: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws
        -> PostgresClient.Configuration
    {
        guard let components = URLComponents(string: url), components.scheme == "postgres" || components.scheme == "postgresql" else {
            throw Invalid(description: "--postgres must be a URL such as postgres://user@host:5432/database (scheme postgres or postgresql).")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }) { _, last in last }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }) ?? query["user"] ?? environment["PGUSER"], !user.isEmpty else {
            throw Invalid(description: "The PostgreSQL URL names no user: write postgres://USER@host/database (or set PGUSER).")
        }
        let password = components.password.flatMap { $0.removingPercentEncoding } ?? environment["PGPASSWORD"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? (query["dbname"] ?? user) : (path.removingPercentEncoding ?? path)
        if let socketFolder = query["host"], socketFolder.hasPrefix("/") {
            let port = components.port ?? query["port"].flatMap(Int.init) ?? 5432
            return socket(folder: socketFolder, port: port, user: user, database: database, password: password)
        }
        guard let host = components.host, !host.isEmpty else {
            throw Invalid(description: "The PostgreSQL URL names no host: write postgres://user@HOST/database, or ?host=/socket/folder.")
        }
        let tls = try Self.tls(mode: query["sslmode"] ?? "disable", rootCertificate: query["sslrootcert"])
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password, database: database, tls: tls
        )
    }

    /// The TLS of `sslmode` `mode`, trusting `rootCertificate` (a PEM file) when given, else the system's roots.
    static func tls(mode: String, rootCertificate: String?) throws -> PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw Invalid(description: "sslrootcert=\(rootCertificate) cannot be read: give the PEM file of the CA that signed the database server's certificate.")
            }
            configuration.trustRoots = .file(rootCertificate)
        }
        switch mode {
        case "disable":
            return .disable
        case "allow", "prefer":
            configuration.certificateVerification = .none
            return .prefer(configuration)
        case "require":
            configuration.certificateVerification = rootCertificate == nil ? .none : .noHostnameVerification
            return .require(configuration)
        case "verify-ca":
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        case "verify-full":
            configuration.certificateVerification = .fullVerification
            return .require(configuration)
        default:
            throw Invalid(description: "sslmode=\(mode) is not supported: use disable, prefer, require, verify-ca or verify-full.")
        }
    }

    /// The database as the logs name it: `/run/postgresql/.s.PGSQL.5432 database keychain_sync user keychain_sync`,
    /// or `db.internal:5432 …` (never the password).
    package static func describe(_ configuration: PostgresClient.Configuration) -> String {
        let place = configuration.unixSocketPath ?? "\(configuration.host ?? "?"):\(configuration.port ?? 5432)"
        return "\(place) database \(configuration.database ?? configuration.username) user \(configuration.username)"
    }

    /// A client configuration for the server's Unix socket in `folder` (as libpq's `host=/folder`).
    package static func socket(
        folder: String, port: Int = 5432, user: String, database: String, password: String? = nil
    )
        -> PostgresClient.Configuration
    {
        PostgresClient.Configuration(
            unixSocketPath: "\(folder)/.s.PGSQL.\(port)", username: user, password: password, database: database
        )
    }
}
#endif
