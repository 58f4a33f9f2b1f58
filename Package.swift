// swift-tools-version:6.1
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

/// A dependency only the Network trait brings (see `traits` below).
let network: TargetDependencyCondition? = .when(traits: ["Network"])

let package = Package(
    name: "swift-keychain",
    platforms: [.macOS(.v15), .iOS(.v18)], // String(validating:as:) needs these on Apple systems
    products: [
        .library(name: "KeychainServices", targets: ["KeychainServices"]),
        .library(name: "KeychainKit", targets: ["KeychainKit"]),
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        // The installed programs: one multi-call binary that is `security`, `keychaind` or `git-credential-keychain`
        // by the name it is run as (Support/package.sh installs it with hard links of those names).
        .executable(name: "keychain", targets: ["keychain"]),
        .executable(name: "security", targets: ["security"]),
        .executable(name: "keychaind", targets: ["keychaind"]),
        .executable(name: "git-credential-keychain", targets: ["git-credential-keychain"]),
        .executable(name: "keychain-sync-server", targets: ["keychain-sync-server"]),
        // The PAM module that unlocks the login keychain at login (libpam_keychain.so, installed as pam_keychain.so).
        .library(name: "pam_keychain", type: .dynamic, targets: ["CPAMKeychain"]),
    ],
    // Network: what talks to other machines, sync (its client and server: HTTP, TLS, WebSockets, PostgreSQL) and OCSP
    // questions. The installed programs are built with it (`swift build --traits Network`); an app that depends on
    // KeychainServices or KeychainKit leaves it off and resolves none of those packages. Every use of a package below
    // the line "Network only" is conditioned on it, which is what keeps them out of an app's resolution.
    traits: [
        .trait(name: "Network", description: "Sync over the network (client and server) and OCSP revocation questions."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // `swift package generate-documentation` builds the DocC catalogs of KeychainServices and KeychainKit.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // ---- Network only (every use below is conditioned on the Network trait) ----
        // The sync server: HTTP and WebSockets (Hummingbird), its API generated from an OpenAPI document (the
        // generated code is committed: Support/generate-sync-api.sh), PostgreSQL storage, Prometheus metrics; the
        // tests talk to it with AsyncHTTPClient, directly and through the generated client.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // NIOCore's IOError names what a sync call's (or an OCSP question's) socket met (its errno).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
    ],
    targets: [
        // ---- C ----
        // The few Linux calls Swift cannot make directly (variadic prctl, struct ucred, glibc's _GNU_SOURCE spawn extensions).
        .target(name: "CKeychainLinux"),
        // pam_keychain.so, in C as PAM modules are (headers from Debian's libpam0g-dev): it runs
        // `security login-keychain-pam` as the user to unlock or re-wrap the login keychain.
        .target(name: "CPAMKeychain", linkerSettings: [.linkedLibrary("pam")]),
        // PKCS#12 files opened with the system's OpenSSL libcrypto: no Swift package reads them, and their
        // legacy profiles (3DES, RC2) are not in swift-crypto. libcrypto is opened (dlopen) on the first PKCS#12
        // file rather than linked, so that no program pays for loading it at start.
        .target(name: "CKeychainPKCS12", linkerSettings: [.linkedLibrary("dl")]),
        // The device key sealed to the machine's TPM 2.0 with tpm2-tss (Debian's libtss2-dev): ESAPI, the TCTI
        // loader, marshalling and response-code decoding, opened (dlopen) on the first TPM call, like libcrypto.
        .target(name: "CKeychainTPM", linkerSettings: [.linkedLibrary("dl")]),
        // PKCS#11 tokens (smart cards, YubiKeys, SoftHSM) through p11-kit's module registry (the modules configured in
        // /usr/share/p11-kit/modules; PKCS#11's header from Debian's libp11-kit-dev): libp11-kit is opened (dlopen) on
        // the first token call, like libcrypto.
        .target(name: "CKeychainPKCS11", linkerSettings: [.linkedLibrary("dl")]),
        // D-Bus through sd-bus from libsystemd (Debian's libsystemd-dev): the headers as a module, nothing more.
        .systemLibrary(name: "CSystemdBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // ---- The engine ----
        // The release version every program's --version prints (KeychainVersion.string): depends on nothing.
        .target(name: "KeychainVersion", swiftSettings: strictSwift),
        // The engine shared by both APIs: schema, codecs, keybag, encrypted SQLite store, query evaluation, trust.
        // No network client: OCSP questions and sync go through seams (OCSPTransport, SyncEngines) that the
        // Network modules fill in.
        .target(
            name: "KeychainCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                "CKeychainLinux",
                "CKeychainPKCS12",
                "CKeychainTPM",
                "CKeychainPKCS11",
            ],
            swiftSettings: strictSwift
        ),
        // What travels between a client and keychaind: typed requests and responses, one frame rule.
        .target(name: "KeychainProtocol", dependencies: ["KeychainCore"], swiftSettings: strictSwift),
        // End-to-end-encrypted sync, the device's side of the cryptography: device keys, zone keys wrapped to devices
        // (HPKE), records sealed at their address, signed device lists, join codes, the conflict rule.
        .target(
            name: "KeychainSync",
            dependencies: ["KeychainCore", .product(name: "Crypto", package: "swift-crypto"), .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSwift
        ),
        // Prompts for the user's presence through pinentry (GnuPG's PIN entry programs, over the Assuan protocol).
        .target(
            name: "KeychainPrompt",
            dependencies: ["KeychainCore", "CKeychainLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        // The seam: a keychain this process can talk to, in-process (the engine) or keychaind (its client), and the
        // one place that chooses between them.
        .target(
            name: "KeychainClient",
            dependencies: ["KeychainPrompt", "KeychainCore", "KeychainProtocol", "CKeychainLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        // A small Swift layer over sd-bus: connections with deadlines, method calls, typed errors, signal waits.
        .target(name: "KeychainDBus", dependencies: ["CSystemdBus"], swiftSettings: strictSwift),
        // Fingerprints through fprintd on the system bus, for SecAccessControl's biometry flags.
        .target(
            name: "KeychainBiometry",
            dependencies: ["KeychainCore", "KeychainDBus", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSwift
        ),

        // ---- The APIs (the library products) ----
        // The part of Apple's LocalAuthentication the keychain uses (`LAContext` for kSecUseAuthenticationContext),
        // source-compatible with `import LocalAuthentication`. Linux only: on Apple's systems the module would hide
        // the system's framework.
        .target(
            name: "LocalAuthentication",
            dependencies: ["KeychainCore", "KeychainClient"],
            swiftSettings: strictSwift
        ),
        // Apple's Keychain Services API, source-compatible with `import Security`.
        .target(
            name: "KeychainServices",
            dependencies: [
                "KeychainCore", "KeychainClient", .target(name: "LocalAuthentication", condition: .when(platforms: [.linux])),
                // OCSP questions over HTTP for SecTrust's revocation policies.
                .target(name: "KeychainNetwork", condition: network),
            ],
            swiftSettings: strictSwift
        ),
        // What is ours alone: the Swift-native API. With the Network trait it also runs sync engines in the process
        // (KeychainSyncClient) for keychains a program opens itself, and asks OCSP responders; without it, sync goes
        // through keychaind and revocation is checked against CRLs only.
        .target(
            name: "KeychainKit",
            dependencies: [
                "KeychainCore", "KeychainClient", .product(name: "Logging", package: "swift-log"),
                .target(name: "KeychainSyncClient", condition: network),
                .target(name: "KeychainNetwork", condition: network),
            ],
            swiftSettings: strictSwift
        ),

        // ---- keychaind ----
        // keychaind as a library: peer identity, policy, request dispatch, the server (connections read with recvmsg
        // for the kernel's per-message credentials, which SwiftNIO's stream channels do not receive).
        .target(
            name: "KeychainDaemon",
            dependencies: [
                "KeychainPrompt",
                "KeychainBiometry",
                "KeychainCore",
                "KeychainProtocol",
                "CKeychainLinux",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The freedesktop Secret Service's transfer algorithms (plain and dh-ietf1024-sha256-aes128-cbc-pkcs7), and a
        // client of another provider on the session bus (what `security import-secret-service` reads).
        .target(
            name: "KeychainSecretServiceClient",
            dependencies: [
                "KeychainCore",
                "KeychainDBus",
                // The Diffie-Hellman exponentiation of dh-ietf1024-sha256-aes128-cbc-pkcs7, through the libcrypto it opens.
                "CKeychainPKCS12",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        // Readers of other password stores' files, for `security import-keyring`: gnome-keyring's keyrings, KWallet's
        // wallets, KeePass databases (KDBX 4 and 3.1), `pass` stores (through the user's gpg).
        // libargon2 and zlib, opened (dlopen) on the first KeePass database that needs them, like libcrypto: Argon2 (no
        // Swift package has it) and gzip, which KDBX files use.
        .target(name: "CKeychainImport", linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "KeychainImport",
            dependencies: [
                "KeychainCore",
                "CKeychainImport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSwift
        ),
        // SSH's formats for the agent keychaind serves: the agent protocol's typed messages and frames, public and
        // private keys and their signatures, OpenSSH private key files (bcrypt KDF on the shared Blowfish).
        .target(
            name: "KeychainSSH",
            dependencies: [
                "KeychainCore",
                "CKeychainLinux",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // The freedesktop Secret Service (org.freedesktop.secrets) served from keychaind over sd-bus: sessions,
        // collections and items as keychain items.
        .target(
            name: "KeychainSecretService",
            dependencies: [
                "KeychainCore",
                "KeychainDBus",
                "KeychainSecretServiceClient",
                // keychaind's caller identification and prompts: the Secret Service runs inside keychaind.
                "KeychainDaemon",
                "KeychainPrompt",
                "CKeychainLinux",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),

        // ---- Network (each module's code that needs a network package is within `#if Network`) ----
        // The HTTP client the programs share, and OCSP questions sent over it (registered with KeychainCore).
        .target(
            name: "KeychainNetwork",
            dependencies: [
                "KeychainCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: network),
                .product(name: "NIOCore", package: "swift-nio", condition: network),
            ],
            swiftSettings: strictSwift
        ),
        // The sync server's HTTP API: one OpenAPI document (served as is at /openapi.yaml) and the server's and the
        // clients' code generated from it (Generated/, by Support/generate-sync-api.sh), with the signing rule.
        .target(
            name: "KeychainSyncAPI",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: network),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["openapi-generator-config.yaml"],
            resources: [.embedInCode("openapi.yaml")],
            swiftSettings: strictSwift
        ),
        // The device's side of sync over the network: the generated client, every request signed by the device's
        // key, and the session (account, joining, approving, sync rounds); registered as the process's SyncEngines.
        .target(
            name: "KeychainSyncClient",
            dependencies: [
                "KeychainSync", "KeychainSyncAPI", "KeychainCore", "KeychainNetwork",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: network),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client", condition: network),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: network),
                .product(name: "NIOCore", package: "swift-nio", condition: network),
                // The push connection's own event loop, shut down after each connection (which closes its socket).
                .product(name: "NIOPosix", package: "swift-nio", condition: network),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: network),
                .product(name: "Crypto", package: "swift-crypto"),
                // The push connection (a WebSocket to the server).
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: network),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The end-to-end-encrypted sync server as a library: request signatures, PostgreSQL storage and
        // migrations, the change feed, push over WebSockets, metrics. It stores opaque bytes only.
        .target(
            name: "KeychainSyncServer",
            dependencies: [
                "KeychainSyncAPI",
                .product(name: "Hummingbird", package: "hummingbird", condition: network),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: network),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird", condition: network),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: network),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: network),
                // The database's TLS: a private CA (sslrootcert) and verify-ca / verify-full.
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: network),
                .product(name: "Metrics", package: "swift-metrics", condition: network),
                .product(name: "Prometheus", package: "swift-prometheus", condition: network),
                .product(name: "NIOCore", package: "swift-nio", condition: network),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),

        // ---- The programs: their logic as libraries, each executable a few lines ----
        // `security`: macOS's keychain tool on KeychainKit's public API (as macOS's uses Security.framework), and the
        // Secret Service client for import-secret-service. With the Network trait, the sync client and OCSP.
        .target(
            name: "SecurityCommand",
            dependencies: [
                "KeychainKit",
                "KeychainSecretServiceClient",
                "KeychainImport",
                // DaemonSocket: where keychaind's SSH agent listens (security ssh-agent).
                "KeychainProtocol",
                // security ssh: OpenSSH key files, and the items the agent serves.
                "KeychainSSH",
                "KeychainVersion",
                .target(name: "KeychainSyncClient", condition: network),
                .target(name: "KeychainNetwork", condition: network),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // keychaind's command line: the daemon that alone opens the keychain and decides from the kernel's peer
        // credentials who may use which access group (Apple's securityd), with the Secret Service.
        .target(
            name: "KeychaindCommand",
            dependencies: [
                "KeychainCore",
                "KeychainDaemon",
                "KeychainProtocol",
                "KeychainSSH",
                "KeychainSecretService",
                "KeychainVersion",
                "CKeychainLinux",
                .target(name: "KeychainSyncClient", condition: network),
                .target(name: "KeychainNetwork", condition: network),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // git's credential helper backed by the keychain (the Linux counterpart of git-credential-osxkeychain).
        .target(name: "GitCredentialCommand", dependencies: ["KeychainServices", "KeychainVersion"], swiftSettings: strictSwift),
        // The installed multi-call binary: the tool named by the executable's file name (a hard link), else by argv[0].
        .executableTarget(
            name: "keychain",
            dependencies: ["SecurityCommand", "KeychaindCommand", "GitCredentialCommand", "KeychainVersion"],
            swiftSettings: strictSwift
        ),
        // The same tools as programs of their own, for development and the tests.
        .executableTarget(name: "security", dependencies: ["SecurityCommand"], swiftSettings: strictSwift),
        .executableTarget(name: "keychaind", dependencies: ["KeychaindCommand"], swiftSettings: strictSwift),
        .executableTarget(name: "git-credential-keychain", dependencies: ["GitCredentialCommand"], swiftSettings: strictSwift),
        // The sync server's command line; everything else is in KeychainSyncServer.
        .executableTarget(
            name: "keychain-sync-server",
            dependencies: [
                "KeychainSyncServer",
                "KeychainSyncAPI",
                "KeychainVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // A small program the tests run as a separate process (crash durability, multi-process races,
        // entitlements read from the environment).
        .executableTarget(
            name: "keychain-test-helper",
            // KeychainSyncClient for sync-writer, the client the sync kill test kills.
            dependencies: ["KeychainServices", "KeychainKit", "KeychainClient", "KeychainCore", "KeychainSync", .target(name: "KeychainSyncClient", condition: network), "KeychainTestSupport"],
            path: "Tests/Helper",
            swiftSettings: strictSwift
        ),
        // keychaind's connection handling driven in-process over a socket pair, for callgrind (valgrind cannot run keychaind itself).
        .executableTarget(
            name: "keychaind-pipeline-probe",
            dependencies: [
                "KeychainCore", "KeychainDaemon", "KeychainProtocol",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PipelineProbe",
            swiftSettings: strictSwift
        ),
        // A pinentry the prompt tests run: speaks Assuan like pinentry, answering as a script file says.
        .executableTarget(
            name: "scripted-pinentry",
            path: "Tests/ScriptedPinentry",
            swiftSettings: strictSwift
        ),
        // What the test targets share: expectations on keychain errors, temporary keychains, running the built tools.
        .target(
            name: "KeychainTestSupport",
            dependencies: ["KeychainCore", "CKeychainLinux"],
            path: "Tests/KeychainTestSupport",
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: ["KeychainTestSupport", "KeychainCore", "KeychainClient", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainSyncTests",
            dependencies: ["KeychainSync", "KeychainCore", "KeychainTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            // How the golden vectors were computed (hashlib and Python's cryptography), kept beside them.
            exclude: ["Vectors"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainProtocolTests",
            dependencies: ["KeychainTestSupport", "KeychainProtocol", "KeychainCore"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainPromptTests",
            dependencies: ["KeychainTestSupport", "KeychainPrompt", "KeychainCore", "scripted-pinentry"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainDaemonTests",
            dependencies: [
                "KeychainTestSupport", "KeychainDaemon", "KeychainProtocol", "KeychainCore", "CKeychainLinux",
                .target(name: "KeychainSyncClient", condition: network),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainServicesTests",
            dependencies: ["KeychainTestSupport", "KeychainServices", .target(name: "LocalAuthentication", condition: .when(platforms: [.linux])), "KeychainCore", "KeychainClient", "KeychainProtocol", "KeychainKit", "keychain-test-helper", "keychaind", "scripted-pinentry", .product(name: "GRDB", package: "GRDB.swift")],
            // A keychain written by the first released format, opened by the upgrade tests, and the attack scripts the
            // identity tests run (both read via #filePath).
            exclude: ["Fixtures", "Attacks/borrow_identity.py"],
            swiftSettings: strictSwift
        ),
        // Apple's declarations, as data: one row per public symbol of KeychainServices and LocalAuthentication (symbol,
        // Apple's Swift declaration, its source). The plugin generates a function per row that uses the symbol with
        // Apple's exact types, so a declaration that differs from Apple's stops this target's build, naming the
        // symbol; the tests check that every public symbol has a row (from the modules' symbol graphs).
        .testTarget(
            name: "KeychainServicesConformanceTests",
            dependencies: ["KeychainServices", .target(name: "LocalAuthentication", condition: .when(platforms: [.linux]))],
            exclude: ["Declarations"],
            swiftSettings: strictSwift,
            plugins: ["DeclarationConformancePlugin"]
        ),
        // Short snippets written in the shapes public keychain wrappers use Apple's API (each cites its project and
        // file), compiled against KeychainServices with a plain import and run in the test process and through keychaind.
        .testTarget(
            name: "KeychainServicesSnippetTests",
            dependencies: ["KeychainTestSupport", "KeychainServices", .target(name: "LocalAuthentication", condition: .when(platforms: [.linux])), "KeychainCore", "KeychainClient", "keychaind"],
            exclude: ["INDEX.md"],
            swiftSettings: strictSwift
        ),
        // The declaration checks' generator and the build plugin that runs it (for KeychainServicesConformanceTests).
        .executableTarget(
            name: "declaration-conformance-generator",
            path: "Tests/DeclarationConformanceGenerator",
            swiftSettings: strictSwift
        ),
        .plugin(
            name: "DeclarationConformancePlugin",
            capability: .buildTool(),
            dependencies: ["declaration-conformance-generator"]
        ),
        .testTarget(
            name: "KeychainKitTests",
            // keychain-sync-server: the sync API's tests run the real server (on a PostgreSQL the environment gives), and
            // keychain-test-helper the app that syncs.
            dependencies: ["KeychainTestSupport", "KeychainKit", "KeychainClient", "KeychainCore", "keychaind", "keychain-sync-server", "keychain-test-helper", .product(name: "InMemoryLogging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "SecurityToolTests",
            // keychain-sync-server: the sync verbs' tests run the real server (on a PostgreSQL the environment gives).
            // git-credential-keychain and KeychainVersion: every program's --help and --version (ProgramMessagesTests); keychain:
            // the multi-call binary the packages install (MultiCallBinaryTests).
            dependencies: ["KeychainTestSupport", "security", "keychaind", "keychain-test-helper", "scripted-pinentry", "keychain-sync-server", "git-credential-keychain", "keychain", "KeychainCore", "KeychainClient", "KeychainVersion"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainBiometryTests",
            dependencies: ["KeychainBiometry", "KeychainDBus", "KeychainCore"],
            swiftSettings: strictSwift
        ),
        // KeychainDBus's server side against a real dbus-daemon (and busctl).
        .testTarget(
            name: "KeychainDBusTests",
            dependencies: ["KeychainDBus", "KeychainTestSupport"],
            swiftSettings: strictSwift
        ),
        // The importers against files the real programs wrote (gnome-keyring, keepassxc-cli, pass and gpg) and
        // documented fixtures (KWallet).
        .testTarget(
            name: "KeychainImportTests",
            dependencies: ["KeychainImport", "KeychainCore", "KeychainTestSupport", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            exclude: ["Fixtures"],
            swiftSettings: strictSwift
        ),
        // SSH's formats against OpenSSH's own tools (ssh-keygen) and golden vectors of the agent protocol.
        .testTarget(
            name: "KeychainSSHTests",
            // keychaind and security are built so the agent tests can run them.
            dependencies: ["KeychainSSH", "KeychainCore", "KeychainTestSupport", "keychaind", "security", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "KeychainSecretServiceTests",
            dependencies: ["KeychainSecretService", "KeychainSecretServiceClient", "KeychainImport", "KeychainTestSupport", "KeychainDBus", "KeychainCore", "CKeychainPKCS12", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            exclude: ["Scripts"],
            swiftSettings: strictSwift
        ),
        // The sync server against a real PostgreSQL (KEYCHAIN_TEST_POSTGRES_SOCKET), over real HTTP and WebSockets.
        .testTarget(
            name: "KeychainSyncServerTests",
            dependencies: [
                "KeychainSyncServer",
                "KeychainSyncAPI",
                "KeychainSyncClient",
                "KeychainSync",
                "KeychainCore",
                // The seeded generator of the property tests.
                "KeychainTestSupport",
                // The processes the kill test starts and kills: the server, and sync-writer in the helper.
                "keychain-sync-server",
                "keychain-test-helper",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: network),
                // The generated client over AsyncHTTPClient, as the keychain's sync client will use it.
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client", condition: network),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: network),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket", condition: network),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: network),
                .product(name: "NIOCore", package: "swift-nio", condition: network),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: network),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: network),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "GitCredentialTests",
            dependencies: ["KeychainTestSupport", "git-credential-keychain"],
            swiftSettings: strictSwift
        ),
    ]
)
