// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "accountd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "accountd", targets: ["accountd"]),
        .executable(name: "accountctl", targets: ["accountctl"]),
        .library(name: "AccountdCore", targets: ["AccountdCore"]),
        .library(name: "AccountdProtocol", targets: ["AccountdProtocol"]),
        .library(name: "AccountdClient", targets: ["AccountdClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", "2.101.0"..<"2.102.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(
            url: "https://github.com/apple/swift-configuration", exact: "1.4.0",
            traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"4.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", exact: "1.0.2"),
    ],
    targets: [
        // Pure protocol: models and the line codec. No SQLite, no NIO channels, no systemd.
        .target(name: "AccountdProtocol"),

        // Client library: an async Swift API over the daemon's socket, for other local programs.
        .target(
            name: "AccountdClient",
            dependencies: [
                "AccountdProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),

        // Core library: account store, schema bundles, the migrator, snapshots, export, preferences.
        .target(
            name: "AccountdCore",
            dependencies: [
                "AccountdProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "CSQLiteConfig",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]),

        // SQLite's process-wide settings (sqlite3_config), over the system libsqlite3.
        .systemLibrary(name: "CSQLiteConfig"),

        // libsystemd, from Debian's libsystemd-dev.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),

        // glibc's mallopt, to bound the daemon's malloc arenas.
        .systemLibrary(name: "CMalloc"),

        // Daemon library: server, dispatch, access, configuration, systemd glue.
        .target(
            name: "AccountdDaemon",
            dependencies: [
                "AccountdCore",
                "AccountdProtocol",
                "CSystemd",
                "CMalloc",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The repository's io.accountd.varlink (linked into the target), served by
            // GetInterfaceDescription without the repository at run time.
            resources: [.embedInCode("Varlink/io.accountd.varlink")]),

        .executableTarget(
            name: "accountd",
            dependencies: [
                "AccountdDaemon",
                "AccountdCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "accountctl",
            dependencies: [
                "AccountdClient",
                "AccountdProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),

        // Helpers shared by the test targets: temporary folders, fixtures, the built binaries.
        .target(
            name: "AccountdTestSupport",
            dependencies: ["AccountdProtocol", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/AccountdTestSupport"),
        .testTarget(name: "AccountdProtocolTests", dependencies: ["AccountdProtocol"]),
        .testTarget(
            name: "AccountdCoreTests",
            dependencies: [
                "AccountdCore",
                "AccountdTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        // The daemon's parts without a socket: the connection state machine, and the
        // connection pipeline driven through NIO's EmbeddedChannel.
        .testTarget(
            name: "AccountdDaemonTests",
            dependencies: [
                "AccountdDaemon",
                "AccountdCore",
                "AccountdProtocol",
                "AccountdTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The client library against the real daemon.
        .testTarget(
            name: "AccountdClientTests",
            dependencies: [
                "AccountdClient",
                "AccountdProtocol",
                "AccountdTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // End-to-end: the real accountd and accountctl binaries, real sockets, real files.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "AccountdProtocol",
                "AccountdTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
    ]
)

// The libFuzzer target over the request dispatcher (`make fuzz`). Declared only when
// ACCOUNTD_FUZZ is set, so that ordinary builds and `swift test` never see it: it links
// only with `-sanitize=fuzzer` (its `main` hands over to libFuzzer's driver), and it
// imports the daemon with `@testable`, which needs a debug build.
if Context.environment["ACCOUNTD_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(
            name: "DispatchFuzzer",
            dependencies: [
                "AccountdDaemon",
                "AccountdCore",
                "AccountdProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Fuzz/DispatchFuzzer",
            exclude: ["dispatch.dict"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}
