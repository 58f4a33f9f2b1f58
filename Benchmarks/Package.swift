// swift-tools-version:6.1
// The benchmark suite, a package of its own so the main build and CI stay fast. Run it from the repository's
// root with `swift package --package-path Benchmarks benchmark` (see the README's "Performance").
import PackageDescription

let strictSwift: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "swift-keychain-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // With the Network trait: the sync benchmarks run the sync server and sync through KeychainKit.
        .package(name: "swift-keychain", path: "..", traits: ["Network"]),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // Stores, daemon and client threads the benchmarks share with the profiling probe.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "KeychainServices", package: "swift-keychain"),
                .product(name: "KeychainKit", package: "swift-keychain"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "KeychainBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                // Built beside the benchmarks so the daemon benchmarks can start it.
                .product(name: "keychaind", package: "swift-keychain"),
            ],
            path: "Benchmarks/KeychainBenchmarks",
            swiftSettings: strictSwift,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // keychaind's SSH agent: signatures with keys it holds and with keys in a (software) TPM.
        .executableTarget(
            name: "SSHAgentBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                // keychaind serves the agent; security makes the TPM-resident key (security ssh create).
                .product(name: "keychaind", package: "swift-keychain"),
                .product(name: "security", package: "swift-keychain"),
            ],
            path: "Benchmarks/SSHAgentBenchmarks",
            swiftSettings: strictSwift,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Sync between devices through the real server and a PostgreSQL of the benchmark's own (issue 18).
        .executableTarget(
            name: "SyncBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                // Built beside the benchmarks so they can start them: the server, and the command line that
                // Scripts/initial-sync-cli.sh times.
                .product(name: "keychain-sync-server", package: "swift-keychain"),
                .product(name: "keychain", package: "swift-keychain"),
            ],
            path: "Benchmarks/SyncBenchmarks",
            swiftSettings: strictSwift,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One operation in a loop, for `valgrind --tool=callgrind` and `perf` (see the README).
        .executableTarget(
            name: "keychain-probe",
            dependencies: ["BenchmarkSupport"],
            swiftSettings: strictSwift
        ),
    ]
)
