import Benchmark
import BenchmarkSupport
import Crypto
import Foundation

// keychaind's SSH agent signing, against the floor under it, in one run:
// - floor: an ECDSA P-256 signature made in this process with swift-crypto (the agent's own signing call);
// - an agent signature with a key keychaind holds (added with the agent protocol, as ssh-add adds it): one
//   request and answer on the agent's socket, the key found in the keychain and unsealed, the signature made;
// - the same with a P-256 key inside a software TPM (swtpm; `security ssh create` with KEYCHAIN_TPM_TCTI): the
//   signature is the TPM's.
// One client, one request at a time: what one ssh login waits for.

final class AgentFixture: @unchecked Sendable {
    var home = ""
    var daemon: DaemonProcess?
    var client: SSHAgentClient?
    var tpm: SoftwareTPMProcess?
    var blob: [UInt8] = []
    let floorKey = P256.Signing.PrivateKey()

    func start(environment: [String: String] = [:]) throws {
        home = NSTemporaryDirectory() + "bench-agent-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        daemon = try DaemonProcess(home: home, arguments: ["--ssh-agent"], environment: environment)
        guard let daemon else { return }
        let deadline = ContinuousClock.now + .seconds(30)
        while client == nil {
            client = try? SSHAgentClient(path: daemon.sshAgentSocket)
            if client == nil {
                guard ContinuousClock.now < deadline else { throw BenchmarkFailure("keychaind's SSH agent did not start") }
                usleep(20_000)
            }
        }
    }

    func tearDown() {
        client = nil
        daemon?.stop()
        daemon = nil
        tpm?.stop()
        tpm = nil
        try? FileManager.default.removeItem(atPath: home)
    }
}

let signed = Array("a session identifier and a user-authentication request, about this long".utf8)

var signatures: Benchmark.Configuration {
    .init(
        metrics: [.throughput, .wallClock],
        timeUnits: .microseconds, warmupIterations: 20,
        maxDuration: .seconds(3), maxIterations: 20_000)
}

let benchmarks: @Sendable () -> Void = {
    let floor = AgentFixture()
    Benchmark("floor · ECDSA P-256 signature in process (swift-crypto)", configuration: signatures) { _ in
        blackHole(try floor.floorKey.signature(for: signed))
    }

    let held = AgentFixture()
    Benchmark(
        "agent · ECDSA P-256 signature, key held by keychaind", configuration: signatures,
        closure: { _ in
            guard let client = held.client else { throw BenchmarkFailure("no agent") }
            try client.sign(blob: held.blob, data: signed)
        },
        setup: {
            try held.start()
            let key = P256.Signing.PrivateKey()
            try held.client?.add(key, comment: "bench")
            held.blob = SSHAgentClient.blob(key.publicKey)
        }, teardown: { held.tearDown() })

    let inTPM = AgentFixture()
    Benchmark(
        "agent · ECDSA P-256 signature, key in the TPM (swtpm)", configuration: signatures,
        closure: { _ in
            guard let client = inTPM.client else { throw BenchmarkFailure("no agent") }
            try client.sign(blob: inTPM.blob, data: signed)
        },
        setup: {
            // A failed setup gets no teardown: stop what was started, or the harness waits on it.
            do { try startInTPM(inTPM) } catch {
                inTPM.tearDown()
                throw error
            }
        }, teardown: { inTPM.tearDown() })
}

/// Starts keychaind with a software TPM and makes a key in it with `security ssh create`, as a person would.
func startInTPM(_ inTPM: AgentFixture) throws {
    guard let tpm = try SoftwareTPMProcess() else { throw BenchmarkFailure("swtpm is not installed") }
    inTPM.tpm = tpm
    // keychaind asks the person before the security tool writes to keychain.ssh: a pinentry that approves
    // (Assuan: OK to everything) stands in for them.
    let approver = NSTemporaryDirectory() + "bench-approve-\(UInt32.random(in: 0 ... .max))"
    try "#!/bin/sh\necho 'OK ready'\nwhile read -r line; do echo OK; case \"$line\" in BYE*) exit 0;; esac; done\n"
        .write(toFile: approver, atomically: true, encoding: .utf8)
    chmod(approver, 0o700)
    try inTPM.start(environment: ["KEYCHAIN_TPM_TCTI": tpm.tcti, "KEYCHAIN_PINENTRY": approver])
    guard let daemon = inTPM.daemon else { return }
    // security ssh create, through this keychaind: the key is made in the TPM.
    let security = URL(fileURLWithPath: BenchEnvironment.executablePath).deletingLastPathComponent().appendingPathComponent("security").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: security)
    process.arguments = ["ssh", "create", "-C", "bench-tpm"]
    var environment = ProcessInfo.processInfo.environment
    // Not the benchmark's malloc counter nor its library path: keychaind trusts only the security tool
    // itself, with nothing preloaded and no library path that could put other code in it.
    environment["LD_PRELOAD"] = nil
    environment["LD_LIBRARY_PATH"] = nil
    environment["KEYCHAIN_ENTITLEMENTS"] = nil
    environment["KEYCHAIN_HOME"] = inTPM.home
    environment["KEYCHAIN_DAEMON_SOCKET"] = daemon.socket
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0, let blob = try inTPM.client?.identities().first else {
        throw BenchmarkFailure("security ssh create failed (exit \(process.terminationStatus)): \(said)")
    }
    inTPM.blob = blob
}
