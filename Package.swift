// swift-tools-version:6.1
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "swift-keychain",
    platforms: [.macOS(.v15), .iOS(.v18)], // String(validating:as:) needs these on Apple systems
    products: [
        .library(name: "KeychainServices", targets: ["KeychainServices"]),
        .library(name: "KeychainKit", targets: ["KeychainKit"]),
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .executable(name: "security", targets: ["security"]),
        .executable(name: "keychaind", targets: ["keychaind"]),
        .executable(name: "git-credential-keychain", targets: ["git-credential-keychain"]),
        .executable(name: "keychain-sync-server", targets: ["keychain-sync-server"]),
        // The PAM module that unlocks the login keychain at login (libpam_keychain.so, installed as pam_keychain.so).
        .library(name: "pam_keychain", type: .dynamic, targets: ["CPAMKeychain"]),
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
        // The sync server: HTTP and WebSockets (Hummingbird), its API generated from an OpenAPI document,
        // PostgreSQL storage, Prometheus metrics; the tests talk to it with AsyncHTTPClient, directly and through
        // the generated client.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // NIOCore's IOError names what a sync call's (or an OCSP question's) socket met (its errno).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
    ],
    targets: [
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
        // D-Bus through sd-bus from libsystemd (Debian's libsystemd-dev): the headers as a module, nothing more.
        .systemLibrary(name: "CSystemdBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // A small Swift layer over sd-bus: connections with deadlines, method calls, typed errors, signal waits.
        .target(name: "KeychainDBus", dependencies: ["CSystemdBus"], swiftSettings: strictSwift),
        // The release version every program's --version prints (KeychainVersion.string): depends on nothing, so the
        // sync server, which links no keychain module, shares it.
        .target(name: "KeychainVersion", swiftSettings: strictSwift),
        // The engine shared by both APIs: schema, codecs, keybag, encrypted SQLite store, query evaluation.
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
                // OCSP questions to a certificate's responder, when a revocation policy asks for them.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CKeychainLinux",
                "CKeychainPKCS12",
                "CKeychainTPM",
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
        // The seam: a keychain this process can talk to, in-process (the engine, and its sync engine) or keychaind
        // (its client), and the one place that chooses between them.
        .target(
            name: "KeychainClient",
            dependencies: ["KeychainPrompt", "KeychainCore", "KeychainProtocol", "CKeychainLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        // Prompts for the user's presence through pinentry (GnuPG's PIN entry programs, over the Assuan protocol).
        .target(
            name: "KeychainPrompt",
            dependencies: ["KeychainCore", "CKeychainLinux", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        // keychaind as a library: peer identity, policy, request dispatch, the server (connections read with recvmsg
        // for the kernel's per-message credentials, which SwiftNIO's stream channels do not receive).
        .target(
            name: "KeychainDaemon",
            dependencies: [
                "KeychainPrompt",
                "KeychainBiometry",
                "KeychainCore",
                "KeychainProtocol",
                // The sync engine of each served keychain, run in the background and answering `security sync`.
                "KeychainSyncClient",
                "CKeychainLinux",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // Fingerprints through fprintd on the system bus, for SecAccessControl's biometry flags.
        .target(
            name: "KeychainBiometry",
            dependencies: ["KeychainCore", "KeychainDBus", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSwift
        ),
        // The freedesktop Secret Service (org.freedesktop.secrets) over sd-bus: sessions, transfer algorithms, collections and items as keychain items.
        .target(
            name: "KeychainSecretService",
            dependencies: [
                "KeychainCore",
                "KeychainDBus",
                // keychaind's caller identification and prompts: the Secret Service runs inside keychaind.
                "KeychainDaemon",
                "KeychainPrompt",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The Diffie-Hellman exponentiation of dh-ietf1024-sha256-aes128-cbc-pkcs7, through the libcrypto it opens.
                "CKeychainPKCS12",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
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
            dependencies: ["KeychainCore", "KeychainClient", .target(name: "LocalAuthentication", condition: .when(platforms: [.linux]))],
            swiftSettings: strictSwift
        ),
        // What is ours alone: the Swift-native API.
        .target(
            name: "KeychainKit",
            // KeychainSyncClient: the sync engine of keychains a program opens itself, registered with KeychainClient
            // here so that programs on Keychain Services alone link no HTTP client.
            dependencies: ["KeychainCore", "KeychainClient", "KeychainSyncClient", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "security",
            dependencies: [
                // Public API only, as macOS's tool uses Security.framework; except import-secret-service, which reads
                // another Secret Service provider with KeychainSecretService's client (Import/) and hands the items
                // to KeychainKit's package-level importSecretServiceItems.
                "KeychainKit",
                "KeychainSecretService",
                "KeychainVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The daemon that alone opens the keychain and decides from the kernel's peer credentials who may
        // use which access group (Apple's securityd).
        .executableTarget(
            name: "keychaind",
            dependencies: [
                "KeychainCore",
                "KeychainDaemon",
                "KeychainSecretService",
                "KeychainVersion",
                "CKeychainLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // git's credential helper backed by the keychain (the Linux counterpart of git-credential-osxkeychain).
        .executableTarget(
            name: "git-credential-keychain",
            dependencies: ["KeychainServices", "KeychainVersion"],
            swiftSettings: strictSwift
        ),
        // The sync server's HTTP API: one OpenAPI document (served as is at /openapi.yaml) from which the server's
        // and the clients' code is generated.
        .target(
            name: "KeychainSyncAPI",
            dependencies: [.product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"), .product(name: "Crypto", package: "swift-crypto")],
            resources: [.embedInCode("openapi.yaml")],
            // The generated files import Foundation and OpenAPIRuntime with `package import` whether they use them or not,
            // which Swift 6.3 warns about in every file; the generator silences that itself from Swift 6.4 on
            // (`@diagnose(UnusedImportAccess, as: ignored)`). The module holds generated code only (and the document itself and the signing rule, `RequestSignature`).
            swiftSettings: strictSwift + [.unsafeFlags(["-suppress-warnings"])],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        // The end-to-end-encrypted sync server as a library: request signatures, PostgreSQL storage and
        // migrations, the change feed, push over WebSockets, metrics. It stores opaque bytes only.
        .target(
            name: "KeychainSyncServer",
            dependencies: [
                "KeychainSyncAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The device's side of sync over the network: the client generated from the API document, every request
        // signed by the device's key, and the session (account, joining, approving, sync rounds).
        .target(
            name: "KeychainSyncClient",
            dependencies: [
                "KeychainSync", "KeychainSyncAPI", "KeychainCore",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The push connection (a WebSocket to the server).
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The sync server's command line; everything else is in KeychainSyncServer.
        .executableTarget(
            name: "keychain-sync-server",
            dependencies: [
                "KeychainSyncServer",
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
            dependencies: ["KeychainServices", "KeychainKit", "KeychainClient", "KeychainCore", "KeychainSync", "KeychainSyncClient", "KeychainTestSupport"],
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
            dependencies: ["KeychainTestSupport", "KeychainDaemon", "KeychainProtocol", "KeychainCore", "CKeychainLinux"],
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
        .testTarget(
            name: "KeychainKitTests",
            // keychain-sync-server: the sync API's tests run the real server (on a PostgreSQL the environment gives).
            dependencies: ["KeychainTestSupport", "KeychainKit", "KeychainClient", "KeychainCore", "keychaind", "keychain-sync-server", .product(name: "InMemoryLogging", package: "swift-log")],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "SecurityToolTests",
            // keychain-sync-server: the sync verbs' tests run the real server (on a PostgreSQL the environment gives).
            // git-credential-keychain and KeychainVersion: every program's --help and --version (ProgramMessagesTests).
            dependencies: ["KeychainTestSupport", "security", "keychaind", "keychain-test-helper", "scripted-pinentry", "keychain-sync-server", "git-credential-keychain", "KeychainCore", "KeychainClient", "KeychainVersion"],
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
        .testTarget(
            name: "KeychainSecretServiceTests",
            dependencies: ["KeychainSecretService", "KeychainTestSupport", "KeychainDBus", "KeychainCore", "CKeychainPKCS12", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
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
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The generated client over AsyncHTTPClient, as the keychain's sync client will use it.
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
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
