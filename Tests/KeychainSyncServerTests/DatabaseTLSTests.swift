#if Network
import Foundation
import KeychainSyncServer
import KeychainTestSupport
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sslmode` and `sslrootcert` against a real PostgreSQL that serves TLS only, with a certificate from a private CA
/// made by the real `openssl`: the URL a deployment writes is the one tested, through ``DatabaseAddress``.
@Suite(.serialized, .enabled(if: TLSPostgres.canRun, "needs root (initdb runs as postgres), PostgreSQL's server binaries and openssl"))
struct DatabaseTLSTests {
    /// Whether a query through `url` succeeds within 8 s (a TLS refusal makes the pool retry, not fail).
    static func connects(_ url: String) async throws -> Bool {
        let configuration = try DatabaseAddress.configuration(url: url, environment: [:])
        let client = PostgresClient(configuration: configuration, backgroundLogger: TestPostgres.logger)
        return await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            group.addTask {
                do {
                    let rows = try await client.query("SELECT 1")
                    for try await _ in rows {}
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(8))
                return false
            }
            var answer = false
            for await result in group {
                if let result {
                    answer = result
                    break
                }
            }
            group.cancelAll()
            return answer
        }
    }

    @Test func sslModesHaveLibpqsMeaningsWithAPrivateCA() async throws {
        let server = try TLSPostgres()
        defer { server.stop() }
        func url(_ host: String, _ mode: String, _ root: String? = nil) -> String {
            "postgres://postgres@\(host):\(server.port)/postgres?sslmode=\(mode)" + (root.map { "&sslrootcert=\($0)" } ?? "")
        }
        // verify-full: the chain to the private CA and the name (the certificate names localhost only).
        #expect(try await Self.connects(url("localhost", "verify-full", server.caFile)))
        #expect(try await !Self.connects(url("127.0.0.1", "verify-full", server.caFile)), "the certificate does not name 127.0.0.1")
        #expect(try await !Self.connects(url("localhost", "verify-full", server.otherCAFile)), "another CA's root")
        #expect(try await !Self.connects(url("localhost", "verify-full")), "the system's roots do not hold the private CA")
        // verify-ca, and require with a root (libpq's verify-ca): the chain, not the name.
        #expect(try await Self.connects(url("127.0.0.1", "verify-ca", server.caFile)))
        #expect(try await !Self.connects(url("127.0.0.1", "verify-ca", server.otherCAFile)))
        #expect(try await Self.connects(url("127.0.0.1", "require", server.caFile)))
        #expect(try await !Self.connects(url("127.0.0.1", "require", server.otherCAFile)))
        // require alone encrypts without checking; disable is refused by a server that takes TLS only.
        #expect(try await Self.connects(url("127.0.0.1", "require")))
        #expect(try await !Self.connects(url("127.0.0.1", "disable")))
        // An unreadable root is named before anything is tried.
        #expect(throws: DatabaseAddress.Invalid.self) { try DatabaseAddress.configuration(url: url("localhost", "verify-full", "/nonexistent/ca.pem"), environment: [:]) }
    }
}

/// A PostgreSQL cluster of its own on 127.0.0.1 that takes TLS connections only (`hostssl`), its certificate for
/// `localhost` issued by a private CA; a second CA that issued nothing.
final class TLSPostgres: Sendable {
    static var canRun: Bool {
        getuid() == 0 && binaries != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
    }

    static var binaries: String? {
        ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"]
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    let folder: String
    let port: Int
    var caFile: String { folder + "/ca.pem" }
    var otherCAFile: String { folder + "/other-ca.pem" }

    init() throws {
        guard let binaries = Self.binaries else { throw TestProcessError("PostgreSQL's initdb was not found.") }
        folder = NSTemporaryDirectory() + "tls-pg-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        port = try unusedLoopbackPort()
        func run(_ program: String, _ arguments: [String]) throws {
            let run = try ProgramRun.run(program, arguments, environment: ["PATH": "/usr/bin:/bin"], directory: folder, timeout: 120)
            guard run.status == 0 else { throw TestProcessError("\(program) \(arguments.first ?? "") failed: \(run.stderr)") }
        }
        let openssl = "/usr/bin/openssl"
        for name in ["ca", "other-ca"] {
            try run(
                openssl,
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(folder)/\(name).key",
                    "-out", "\(folder)/\(name).pem", "-subj", "/CN=Test \(name)", "-days", "2",
                ])
        }
        try run(
            openssl,
            [
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(folder)/server.key",
                "-out", "\(folder)/server.csr", "-subj", "/CN=localhost",
            ])
        try "subjectAltName=DNS:localhost\n".write(toFile: folder + "/san.ext", atomically: true, encoding: .utf8)
        try run(
            openssl,
            [
                "x509", "-req", "-in", "\(folder)/server.csr", "-CA", "\(folder)/ca.pem", "-CAkey", "\(folder)/ca.key", "-CAcreateserial",
                "-out", "\(folder)/server.pem", "-days", "2", "-extfile", "\(folder)/san.ext",
            ])
        try run("/usr/bin/chown", ["-R", "postgres:", folder])
        chmod(folder, 0o755)
        chmod(folder + "/server.key", 0o600)
        let data = folder + "/data"
        try run("/usr/sbin/runuser", ["-u", "postgres", "--", binaries + "/initdb", "-D", data, "--auth=trust", "--username=postgres", "--no-sync"])
        try "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n".write(
            toFile: data + "/pg_hba.conf", atomically: true, encoding: .utf8)
        try run("/usr/bin/chown", ["postgres:", data + "/pg_hba.conf"])
        let options =
            "-k \(folder) -c listen_addresses=127.0.0.1 -p \(port) -c ssl=on -c ssl_cert_file=\(folder)/server.pem "
            + "-c ssl_key_file=\(folder)/server.key -c fsync=off"
        // Not through Foundation's Process: pg_ctl exits while the server it started lives on, and Process then never
        // sees it end.
        let status = Self.spawnAndWait(["/usr/sbin/runuser", "-u", "postgres", "--", binaries + "/pg_ctl", "-D", data, "-l", folder + "/log", "-w", "-o", options, "start"])
        guard status == 0 else { throw TestProcessError("pg_ctl start failed (exit \(status)); see \(folder)/log.") }
    }

    /// Runs `arguments` with `posix_spawn`, its output to /dev/null, and reaps it: its exit status.
    static func spawnAndWait(_ arguments: [String]) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    func stop() {
        if let binaries = Self.binaries {
            _ = Self.spawnAndWait(["/usr/sbin/runuser", "-u", "postgres", "--", binaries + "/pg_ctl", "-D", folder + "/data", "-m", "immediate", "stop"])
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}
#endif
