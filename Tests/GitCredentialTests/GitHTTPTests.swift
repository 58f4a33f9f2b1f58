import Foundation
import KeychainTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP server with Basic authentication in front of `git http-backend`, written to the test's
/// folder and run with `python3`. Arguments: project root, user, file holding the current password,
/// path of git-http-backend. It prints the port it bound, then serves until killed.
let basicAuthGitServer = #"""
    import base64, http.server, os, signal, subprocess, sys

    # The test runner may start us with SIGTERM blocked; take it back so the test can stop us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    root, user, password_file, backend = sys.argv[1:5]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args):
            pass

        def serve(self):
            with open(password_file) as f:
                password = f.read().strip()
            expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = dict(os.environ)
            for name, value in self.headers.items():
                env["HTTP_" + name.upper().replace("-", "_")] = value
            env.update(GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path, QUERY_STRING=query,
                       REQUEST_METHOD=self.command, CONTENT_TYPE=self.headers.get("Content-Type", ""),
                       CONTENT_LENGTH=str(len(body)), REMOTE_USER=user, REMOTE_ADDR="127.0.0.1",
                       GATEWAY_INTERFACE="CGI/1.1", SERVER_PROTOCOL="HTTP/1.0")
            out = subprocess.run([backend], input=body, env=env, stdout=subprocess.PIPE).stdout
            crlf, lf = out.find(b"\r\n\r\n"), out.find(b"\n\n")
            if crlf >= 0 and (lf < 0 or crlf < lf):
                head, payload = out[:crlf], out[crlf + 4:]
            elif lf >= 0:
                head, payload = out[:lf], out[lf + 2:]
            else:
                head, payload = b"", out
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = serve
        do_POST = serve

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """#

/// Real git against a local bare repository over HTTP with Basic authentication, using the built helper as
/// `credential.helper`.
@Suite struct GitHTTPTests {
    /// The git under test.
    static let git = "/usr/bin/git"

    /// git's `git-http-backend`, or `nil` when this git has none.
    static func httpBackend() -> String? {
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: git)
        process.arguments = ["--exec-path"]
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let folder = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let backend = folder + "/git-http-backend"
        return FileManager.default.isExecutableFile(atPath: backend) ? backend : nil
    }

    /// A running server: the process and its port.
    struct Server {
        /// The python process.
        let process: Process
        /// The loopback port it listens on.
        let port: Int

        /// Stops the server (our own child, by its pid, with SIGKILL: a child of the test runner can
        /// inherit a blocked SIGTERM) and waits for it.
        func stop() {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// Starts the server and reads the port it prints.
    static func startServer(
        _ sandbox: HelperSandbox, root: String, user: String, passwordFile: String,
        backend: String
    ) throws -> Server {
        let script = sandbox.root + "/server.py"
        try basicAuthGitServer.write(toFile: script, atomically: true, encoding: .utf8)
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python ?? "/usr/bin/env")
        process.arguments = (python == nil ? ["python3"] : []) + [script, root, user, passwordFile, backend]
        process.environment = sandbox.environment()
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        let deadline = Date().addingTimeInterval(10)
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty || Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                throw TestProcessError("the HTTP server did not start")
            }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw TestProcessError("the HTTP server printed no port")
        }
        return Server(process: process, port: port)
    }

    /// Clone with a one-shot askpass stores the credential; a later fetch needs no prompt; a password
    /// changed on the server makes git reject the credential, and the helper erases it.
    @Test(
        "git clone stores the credential, fetch reuses it, a changed password makes git erase it",
        .enabled(if: GitHTTPTests.httpBackend() != nil, "skipped: git-http-backend is not in `git --exec-path`"))
    func gitOverHTTP() throws {
        let backend = try #require(GitHTTPTests.httpBackend())
        let sb = try HelperSandbox()
        defer { sb.remove() }
        let git = GitHTTPTests.git
        let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]

        // A bare repository with one commit.
        let projects = sb.root + "/srv"
        try FileManager.default.createDirectory(atPath: projects, withIntermediateDirectories: true)
        #expect(try sb.run(git, identity + ["init", "-q", "--bare", projects + "/repo.git"]).status == 0)
        #expect(try sb.run(git, identity + ["init", "-q", sb.root + "/src"]).status == 0)
        #expect(try sb.run(git, identity + ["-C", sb.root + "/src", "commit", "-q", "--allow-empty", "-m", "first"]).status == 0)
        #expect(try sb.run(git, ["-C", sb.root + "/src", "push", "-q", projects + "/repo.git", "HEAD:refs/heads/main"]).status == 0)

        let passwordFile = sb.root + "/password"
        try "secret-1\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let server = try GitHTTPTests.startServer(sb, root: projects, user: "alice", passwordFile: passwordFile, backend: backend)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/repo.git"
        let withHelper = ["-c", "credential.helper=" + sb.helper]
        let noPrompt: [String: String?] = ["GIT_ASKPASS": nil, "SSH_ASKPASS": nil, "GIT_TERMINAL_PROMPT": "0"]

        // Without credentials (no helper entry, no prompt) the server refuses.
        let refused = try sb.run(git, withHelper + ["ls-remote", url], environment: noPrompt)
        #expect(refused.status != 0)

        // First clone: a one-shot askpass answers, git stores the credential through the helper.
        let askpass = sb.root + "/askpass.sh"
        try "#!/bin/sh\ncase \"$1\" in Username*) echo alice ;; *) echo secret-1 ;; esac\n"
            .write(toFile: askpass, atomically: true, encoding: .utf8)
        #expect(chmod(askpass, 0o755) == 0)
        let clone = try sb.run(
            git, withHelper + ["clone", "-q", url, sb.root + "/clone"],
            environment: ["GIT_ASKPASS": askpass, "SSH_ASKPASS": nil])
        #expect(clone.status == 0, "clone failed: \(clone.stderr)")
        try FileManager.default.removeItem(atPath: askpass)
        let stored = try sb.helper("get", "protocol=http\nhost=127.0.0.1:\(server.port)\n")
        #expect(stored.stdout == "username=alice\npassword=secret-1\n")

        // Second fetch: no askpass, no terminal prompt; the helper's credential is enough.
        let fetch = try sb.run(git, withHelper + ["-C", sb.root + "/clone", "fetch", "-q", "origin"], environment: noPrompt)
        #expect(fetch.status == 0, "fetch failed: \(fetch.stderr)")

        // The password changes on the server: the fetch fails, git rejects the credential, the helper erases it.
        try "secret-2\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let rejected = try sb.run(git, withHelper + ["-C", sb.root + "/clone", "fetch", "-q", "origin"], environment: noPrompt)
        #expect(rejected.status != 0)
        let gone = try sb.helper("get", "protocol=http\nhost=127.0.0.1:\(server.port)\n")
        #expect(gone.status == 0 && gone.stdout == "")
    }
}
