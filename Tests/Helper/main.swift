// A small program the tests run as a separate process: it calls Keychain Services exactly as an app
// would, with KEYCHAIN_HOME and KEYCHAIN_ENTITLEMENTS from its environment.
//
//   keychain-test-helper add ACCOUNT SERVICE SECRET [GROUP]   → "status=N"
//   keychain-test-helper add-and-hold ACCOUNT SERVICE SECRET  → "status=N", then sleeps until killed
//   keychain-test-helper hold                                → does nothing until killed (a trusted program an attacker
//                                                               execs while keeping its connection)
//   keychain-test-helper race BARRIER ACCOUNT SERVICE SECRET  → waits for file BARRIER, adds, "status=N"
//   keychain-test-helper find ACCOUNT SERVICE [GROUP]         → "status=N", "data=…", "agrp=…" (and "trusted=A,B"
//                                                               when the item has trusted applications)
//   keychain-test-helper trusted-add ACCOUNT SERVICE SECRET [TERM…] → SecItemAdd with kSecAttrTrustedApplications
//                                                               TERM…: "status=N"
//   keychain-test-helper trusted-set ACCOUNT SERVICE [TERM…]  → SecItemUpdate of kSecAttrTrustedApplications: "status=N"
//   keychain-test-helper delete ACCOUNT SERVICE               → SecItemDelete: "status=N"
//   keychain-test-helper fork-find ACCOUNT SERVICE            → finds ("parent=N"), forks, the child finds
//                                                               ("child=N"), then the parent again ("parent-after=N")
//   keychain-test-helper set-passcode P ACCOUNT SERVICE SECRET → sets passcode P, adds a WhenUnlocked item
//   keychain-test-helper unlock-and-find P ACCOUNT SERVICE    → finds before and after KeychainStore.default.unlock
//   keychain-test-helper unlock-idle-find P ACCOUNT SERVICE S → unlocks, finds ("after="), waits S seconds unused,
//                                                               finds again ("idle=")
//   keychain-test-helper bench N                              → rough single-thread ops/s of add, find, update, delete
//   keychain-test-helper mixed SEED N                         → N random add/find/update/delete calls on 16 shared
//                                                               keys; "calls=N unexpected=M"
//   keychain-test-helper writer PREFIX                        → adds PREFIX-0, PREFIX-1, … until killed; "ack I" after
//                                                               each acknowledged add
//   keychain-test-helper kit-sync-pair URL FOLDER-A FOLDER-B → two KeychainKit stores make a sync account, join,
//                                                               and sync an item; a transcript (KitSyncPair.swift)
//   keychain-test-helper sync-writer HOME PREFIX SEED [settle] → opens the keychain at HOME in this process and its
//                                                               sync session; edits items PREFIX-n and syncs, round
//                                                               after round, until killed: "ready", "round K",
//                                                               "ack PREFIX-n rev:R|deleted ITEM VERSION" for each
//                                                               state the server took (see SyncWriter.swift);
//                                                               settle: no edits, syncs until nothing is left, "settled"
//   keychain-test-helper trust LEAF.der [CA.der …] [host=NAME] → "trusted chain=N" or "not trusted status=N"
//                              [revocation=FLAGS] [nofetch] → with a revocation policy (kSecRevocation… bits), also
//                                                               " revocation-checked=true|false"
//   keychain-test-helper trust-in-tasks N ANCHOR.der LEAF.der [CA.der …] → N tasks of Swift's pool evaluate the
//                                                               chain at once: "trusted=K of N"
//   keychain-test-helper trust-settings VERB …                → SecTrustSettings… calls (see TrustSettingsVerbs.swift)
//   keychain-test-helper kit-set KEY VALUE                    → KeychainKit's default store: "ok" or "error=OSStatus"
//   keychain-test-helper kit-keys                             → KeychainKit: every key of service "kit", comma-separated
//   keychain-test-helper kit-get KEY                          → KeychainKit: "value=…", "none" or "error=OSStatus"
//   keychain-test-helper kit-set-sync KEY VALUE               → kit-set, as a synchronizable item (it syncs)
//   keychain-test-helper try-open PATH…                      → "errno=N PATH" for each: 0 when open(PATH, O_RDONLY)
//                                                               succeeded (what this process's user may read)
//   keychain-test-helper find-in-context ACCOUNT SERVICE CONTEXT → finds the data under the authentication context
//                                                               CONTEXT (32 hex digits): "status=N", "data=…"
//   keychain-test-helper with-plugin LIBRARY COMMAND …        → loads LIBRARY (as a program loads a plugin its
//                                                               configuration names), then runs COMMAND
//   keychain-test-helper latency OP N THREADS [FILE]          → OP (add or find) N times on THREADS threads; prints
//                                                               "ops/s p50_us p99_us"; FILE gets every sample (µs)
import Foundation
import KeychainServices
import KeychainKit
import KeychainClient
import KeychainCore
import Synchronization

// Every `print` is flushed at once (line-buffered output), so a parent sees a status before a kill.
func flushLine(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
var args = Array(CommandLine.arguments.dropFirst())
if args.first == "with-plugin", args.count >= 3 {
    guard dlopen(args[1], RTLD_NOW) != nil else {
        flushLine("dlopen failed: \(dlerror().map { String(cString: $0) } ?? "")")
        exit(2)
    }
    args.removeFirst(2)
}

func add(_ account: String, _ service: String, _ secret: String, group: String?) -> OSStatus {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrAccount as String: account,
        kSecAttrService as String: service,
        kSecValueData as String: Data(secret.utf8),
    ]
    if let group { query[kSecAttrAccessGroup as String] = group }
    return SecItemAdd(query as CFDictionary, nil)
}

/// KeychainKit's view, in the default store (keychaind when the environment names it).
let kit = Keychain(service: "kit")

switch args.first {
case "kit-set" where args.count == 3:
    do {
        try kit.set(args[2], for: args[1])
        flushLine("ok")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "kit-set-sync" where args.count == 3:
    do {
        try kit.synchronizable(true).set(args[2], for: args[1])
        flushLine("ok")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "kit-keys":
    do {
        flushLine(try kit.allKeys().joined(separator: ","))
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "kit-get" where args.count == 2:
    do {
        flushLine(try kit.string(for: args[1]).map { "value=\($0)" } ?? "none")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "add" where args.count >= 4:
    flushLine("status=\(add(args[1], args[2], args[3], group: args.count > 4 ? args[4] : nil))")
case "add-and-hold" where args.count == 4:
    flushLine("status=\(add(args[1], args[2], args[3], group: nil))")
    while true { sleep(60) }
case "try-open" where args.count >= 2:
    for path in args.dropFirst() {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        let failure = fd < 0 ? errno : 0
        if fd >= 0 { close(fd) }
        flushLine("errno=\(failure) \(path)")
    }
case "hold":
    while true { sleep(60) }
case "race" where args.count == 5:
    while !FileManager.default.fileExists(atPath: args[1]) { usleep(1_000) }
    flushLine("status=\(add(args[2], args[3], args[4], group: nil))")
case "fork-find" where args.count == 3:
    func findStatus() -> OSStatus {
        SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[1],
                kSecAttrService as String: args[2], kSecReturnData as String: true,
            ] as CFDictionary, nil)
    }
    flushLine("parent=\(findStatus())")  // leaves a pooled connection to keychaind
    let child = fork()
    if child == 0 {
        flushLine("child=\(findStatus())")
        _exit(0)
    }
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    flushLine("parent-after=\(findStatus())")
case "find-in-context" where args.count == 4:
    var bytes: [UInt8] = []
    var hex = Substring(args[3])
    while hex.count >= 2, let byte = UInt8(hex.prefix(2), radix: 16) { bytes.append(byte); hex = hex.dropFirst(2) }
    do throws(KeychainError) {
        guard let context = AuthenticationContextID(bytes: Data(bytes)) else { throw KeychainError(code: .invalidParameter, message: "bad context") }
        var query = ItemQuery(itemClass: .genericPassword)
        query.attributes = ["acct": .string(args[1]), "svce": .string(args[2])]
        query.returns.data = true
        query.authentication.context = context
        query.authentication.reuseDuration = 60
        let items = try KeychainConnector.environment().find(query)
        flushLine("status=0")
        if let data = items.first?.data { flushLine("data=\(String(decoding: data, as: UTF8.self))") }
    } catch {
        flushLine("status=\(error.status.rawValue)")
    }
case "find" where args.count >= 3:
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrAccount as String: args[1],
        kSecAttrService as String: args[2],
        kSecReturnData as String: true,
        kSecReturnAttributes as String: true,
    ]
    if args.count > 3 { query[kSecAttrAccessGroup as String] = args[3] }
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    flushLine("status=\(status)")
    if let dict = item as? [String: Any] {
        if let data = dict[kSecValueData as String] as? Data { flushLine("data=\(String(decoding: data, as: UTF8.self))") }
        if let group = dict[kSecAttrAccessGroup as String] as? String { flushLine("agrp=\(group)") }
        if let trusted = dict[kSecAttrTrustedApplications as String] as? [String] { flushLine("trusted=\(trusted.joined(separator: ","))") }
    }
case "set-passcode" where args.count == 5:
    do {
        try KeychainStore.default.setPasscode(args[1])
        flushLine("status=\(add(args[2], args[3], args[4], group: nil))")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "unlock-and-find" where args.count == 4:
    func find() -> OSStatus {
        SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[2],
                kSecAttrService as String: args[3],
            ] as CFDictionary, nil)
    }
    flushLine("before=\(find())")
    do {
        try KeychainStore.default.unlock(passcode: args[1])
        flushLine("after=\(find())")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "unlock-idle-find" where args.count == 5:
    func find() -> OSStatus {
        SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[2],
                kSecAttrService as String: args[3],
            ] as CFDictionary, nil)
    }
    do {
        try KeychainStore.default.unlock(passcode: args[1])
        flushLine("after=\(find())")
        Thread.sleep(forTimeInterval: Double(args[4]) ?? 0)
        flushLine("idle=\(find())")
    } catch {
        flushLine("error=\(error.status.rawValue)")
    }
case "bench" where args.count == 2:
    let n = Int(args[1]) ?? 1000
    func measure(_ label: String, _ body: (Int) -> OSStatus) {
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<n where body(i) != errSecSuccess { flushLine("\(label) failed at \(i)"); exit(1) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        flushLine("\(label): \(Int(Double(n) / seconds)) ops/s (\(n) in \(String(format: "%.2f", seconds)) s)")
    }
    measure("add") { add("account-\($0)", "bench", "secret-\($0)", group: nil) }
    measure("find (return data)") { i in
        var item: CFTypeRef?
        return SecItemCopyMatching(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "account-\(i)",
                kSecAttrService as String: "bench", kSecReturnData as String: true,
            ] as CFDictionary, &item)
    }
    measure("update") { i in
        SecItemUpdate(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "account-\(i)",
                kSecAttrService as String: "bench",
            ] as CFDictionary, [kSecValueData as String: Data("new-\(i)".utf8)] as CFDictionary)
    }
    measure("delete") { i in
        SecItemDelete(
            [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "account-\(i)",
                kSecAttrService as String: "bench",
            ] as CFDictionary)
    }
case "mixed" where args.count == 3:
    var rng = SystemRandomNumberGenerator()
    let seed = args[1], n = Int(args[2]) ?? 100
    var unexpected = 0
    for i in 0..<n {
        let key: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrAccount as String: "k\(Int.random(in: 0 ..< 16, using: &rng))",
            kSecAttrService as String: "mixed",
        ]
        let status: OSStatus
        let allowed: Set<OSStatus>
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            status = SecItemAdd(key.merging([kSecValueData as String: Data("\(seed)-\(i)".utf8)]) { $1 } as CFDictionary, nil)
            allowed = [errSecSuccess, errSecDuplicateItem]
        case 1:
            var item: CFTypeRef?
            status = SecItemCopyMatching(key.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &item)
            allowed = [errSecSuccess, errSecItemNotFound]
        case 2:
            status = SecItemUpdate(key as CFDictionary, [kSecValueData as String: Data("\(seed)-u\(i)".utf8)] as CFDictionary)
            allowed = [errSecSuccess, errSecItemNotFound]
        default:
            status = SecItemDelete(key as CFDictionary)
            allowed = [errSecSuccess, errSecItemNotFound]
        }
        if !allowed.contains(status) {
            unexpected += 1
            flushLine("unexpected=\(status)")
        }
    }
    flushLine("calls=\(n) unexpected=\(unexpected)")
case "writer" where args.count == 2:
    var i = 0
    while true {
        let status = add("\(args[1])-\(i)", "writer", "v-\(i)", group: nil)
        if status == errSecSuccess { flushLine("ack \(i)") } else { usleep(2_000) }
        i += 1
    }
case "latency" where args.count == 4 || args.count == 5:
    let op = args[1], n = Int(args[2]) ?? 1000, threads = Int(args[3]) ?? 1
    let tag = "\(getpid())"
    if op == "find" {
        _ = add("lat-\(tag)", "latency", "secret", group: nil)
    }
    let samples = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: n * threads)
    defer { samples.deallocate() }
    let base = UInt(bitPattern: samples.baseAddress)
    let start = DispatchTime.now().uptimeNanoseconds
    DispatchQueue.concurrentPerform(iterations: threads) { t in
        let out = UnsafeMutablePointer<UInt64>(bitPattern: base)
        for i in 0..<n {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let status: OSStatus
            if op == "add" {
                status = add("lat-\(tag)-\(t)-\(i)", "latency", "secret-\(i)", group: nil)
            } else {
                var item: CFTypeRef?
                status = SecItemCopyMatching(
                    [
                        kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "lat-\(tag)",
                        kSecAttrService as String: "latency", kSecReturnData as String: true,
                    ] as CFDictionary, &item)
            }
            if status != errSecSuccess { flushLine("failed status=\(status)"); exit(1) }
            out?[t * n + i] = DispatchTime.now().uptimeNanoseconds - t0
        }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let sorted = samples.sorted()
    func percentile(_ p: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000 }
    flushLine(String(format: "%.0f %.1f %.1f", Double(n * threads) / seconds, percentile(0.5), percentile(0.99)))
    if args.count == 5 {
        // Every sample in microseconds, one a line, so several processes' samples can be pooled.
        let lines = sorted.map { String(format: "%.1f", Double($0) / 1000) }.joined(separator: "\n")
        guard FileManager.default.createFile(atPath: args[4], contents: Data((lines + "\n").utf8)) else {
            flushLine("cannot write \(args[4])")
            exit(1)
        }
    }
#if Network
case "kit-sync-pair" where args.count == 4:
    #if Network
    let (server, alphaFolder, betaFolder) = (args[1], args[2], args[3])
    Task { exit(await KitSyncPair.run(server: server, alphaFolder: alphaFolder, betaFolder: betaFolder)) }
    dispatchMain()
    #else
    flushLine("error built without the Network trait")
    exit(2)
    #endif
case "sync-writer" where args.count == 4 || (args.count == 5 && args[4] == "settle"):
    let (home, prefix, seed, settle) = (args[1], args[2], UInt64(args[3]) ?? 0, args.count == 5)
    Task { exit(await SyncWriter.run(home: home, prefix: prefix, seed: seed, settle: settle)) }
    dispatchMain()
#endif
case "trusted-add" where args.count >= 4:
    // kSecAttrTrustedApplications (ours) on SecItemAdd: the terms after the secret.
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[1], kSecAttrService as String: args[2],
        kSecValueData as String: Data(args[3].utf8), kSecAttrTrustedApplications as String: Array(args.dropFirst(4)),
    ]
    flushLine("status=\(SecItemAdd(query as CFDictionary, nil))")
case "trusted-set" where args.count >= 3:
    // SecItemUpdate of kSecAttrTrustedApplications to the terms given (none: the list is removed).
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[1], kSecAttrService as String: args[2],
    ]
    let changes: [String: Any] = [kSecAttrTrustedApplications as String: Array(args.dropFirst(3))]
    flushLine("status=\(SecItemUpdate(query as CFDictionary, changes as CFDictionary))")
case "delete" where args.count == 3:
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: args[1], kSecAttrService as String: args[2],
    ]
    flushLine("status=\(SecItemDelete(query as CFDictionary))")
case "trust" where args.count >= 2:
    // Evaluates DER certificates (leaf first) against the system roots; "host=NAME" adds an SSL server policy,
    // "revocation=FLAGS" a revocation policy, "nofetch" disallows network fetching.
    let host = args.dropFirst().first { $0.hasPrefix("host=") }.map { String($0.dropFirst(5)) }
    let revocation = args.dropFirst().first { $0.hasPrefix("revocation=") }.flatMap { CFOptionFlags($0.dropFirst(11)) }
    let certificates = args.dropFirst().filter { !$0.hasPrefix("host=") && !$0.hasPrefix("revocation=") && $0 != "nofetch" }.compactMap { path in
        FileManager.default.contents(atPath: path).flatMap { SecCertificateCreateWithData(nil, $0 as CFData) }
    }
    var trust: SecTrust?
    let policy = host.map { SecPolicyCreateSSL(true, $0 as CFString) } ?? SecPolicyCreateBasicX509()
    guard SecTrustCreateWithCertificates(certificates as CFArray, policy, &trust) == errSecSuccess, let trust else {
        flushLine("no trust object")
        exit(1)
    }
    if let revocation, let check = SecPolicyCreateRevocation(revocation) {
        guard SecTrustSetPolicies(trust, [policy, check] as CFArray) == errSecSuccess else {
            flushLine("cannot set policies")
            exit(1)
        }
    }
    if args.contains("nofetch") { _ = SecTrustSetNetworkFetchAllowed(trust, false) }
    var error: CFError?
    if SecTrustEvaluateWithError(trust, &error) {
        var line = "trusted chain=\((SecTrustCopyCertificateChain(trust) as? [SecCertificate])?.count ?? 0)"
        if revocation != nil {
            let checked = (SecTrustCopyResult(trust) as? [String: Any])?[kSecTrustRevocationChecked as String] as? Bool
            line += " revocation-checked=\(checked ?? false)"
        }
        flushLine(line)
    } else {
        flushLine("not trusted status=\(error?.code ?? 0)")
    }
case "trust-in-tasks" where args.count >= 4:
    // trust-in-tasks COUNT ANCHOR.der LEAF.der [INTERMEDIATE.der …]: COUNT tasks of Swift's pool evaluate the chain at
    // once (each call blocks its pool thread, as an app's async code calling this synchronous API does).
    let count = Int(args[1]) ?? 0
    let files = args.dropFirst(2).compactMap { FileManager.default.contents(atPath: $0) }
    let certificates = files.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
    guard count > 0, certificates.count == args.count - 2 else {
        flushLine("usage: trust-in-tasks COUNT ANCHOR LEAF [INTERMEDIATE…]")
        exit(2)
    }
    let anchor = certificates[0], chain = Array(certificates.dropFirst())
    let done = DispatchSemaphore(value: 0)
    let trusted = Mutex(0)
    Task.detached {
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    var trust: SecTrust?
                    guard SecTrustCreateWithCertificates(chain as CFArray, SecPolicyCreateBasicX509(), &trust) == errSecSuccess,
                        let trust, SecTrustSetAnchorCertificates(trust, [anchor] as CFArray) == errSecSuccess
                    else { return false }
                    return SecTrustEvaluateWithError(trust, nil)
                }
            }
            for await ok in group where ok { trusted.withLock { $0 += 1 } }
        }
        done.signal()
    }
    done.wait()
    flushLine("trusted=\(trusted.withLock { $0 }) of \(count)")
case "trust-settings" where args.count >= 2:
    exit(trustSettingsVerb(Array(args.dropFirst())))
default:
    FileHandle.standardError.write(Data("usage: keychain-test-helper add|add-and-hold|race|find …\n".utf8))
    exit(2)
}
