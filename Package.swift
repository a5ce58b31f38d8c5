// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Sluice",
    products: [
        .executable(name: "sluice", targets: ["sluice"]),
        .library(name: "SluiceCore", targets: ["SluiceCore"]),
        // Sluice as a library: every component, YAML or built in code, fed from and read into AsyncSequences.
        .library(name: "Sluice", targets: ["Sluice"]),
    ],
    targets: [
        // MARK: - C libraries, each wrapped by exactly one Swift module

        .systemLibrary(
            name: "CLibYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .target(name: "SluiceYAML", dependencies: ["CLibYAML"]),
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .target(name: "SluiceWebSocket", dependencies: ["CLibWebSockets", "SluiceSync"]),
        .systemLibrary(
            name: "CLibPCRE2",
            pkgConfig: "libpcre2-8",
            providers: [.apt(["libpcre2-dev"])]
        ),
        .target(name: "SluiceRegex", dependencies: ["CLibPCRE2"]),
        .systemLibrary(
            name: "CLibRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(name: "SluiceKafka", dependencies: ["CLibRdKafka", "SluiceSync"]),

        // MARK: - Core, components, command line

        // `Mutex.locked` and hand-off annotations: what ThreadSanitizer cannot see of Mutex and continuations.
        .target(name: "SluiceSync"),
        .target(name: "SluiceCore", dependencies: ["SluiceYAML", "SluiceSync", "SluiceRegex"]),
        // The `websocket_server` options shared by the sink and the source, and their mapping onto the wrapper.
        .target(name: "SluiceWebSocketListener", dependencies: ["SluiceCore", "SluiceWebSocket"]),
        // The `kafka` options shared by the source and the sink, and their errors' reporting.
        .target(name: "SluiceKafkaClientConfig", dependencies: ["SluiceCore", "SluiceSync", "SluiceKafka"]),
        .target(
            name: "SluiceSources",
            dependencies: [
                "SluiceCore", "SluiceSync", "SluiceWebSocket", "SluiceWebSocketListener", "SluiceRegex", "SluiceKafka",
                "SluiceKafkaClientConfig",
            ]),
        .target(name: "SluiceTransforms", dependencies: ["SluiceCore"]),
        .target(
            name: "SluiceSinks",
            dependencies: [
                "SluiceCore", "SluiceSync", "SluiceWebSocket", "SluiceWebSocketListener", "SluiceKafka",
                "SluiceKafkaClientConfig",
            ]),
        // The HTTP API of a running pipeline, and the dashboard it serves (its page compiled into the binary).
        .target(
            name: "SluiceAPI",
            dependencies: ["SluiceCore", "SluiceSync", "SluiceWebSocket"],
            resources: [.embedInCode("Dashboard/dashboard.html")]
        ),
        .target(
            name: "SluiceCLI",
            dependencies: ["SluiceCore", "SluiceSources", "SluiceTransforms", "SluiceSinks", "SluiceAPI"]
        ),
        .executableTarget(name: "sluice", dependencies: ["SluiceCLI", "SluiceSync"]),
        .target(
            name: "Sluice",
            dependencies: ["SluiceCore", "SluiceSync", "SluiceSources", "SluiceTransforms", "SluiceSinks"]),
        // The README's library example, built with the package so that it cannot rot.
        .executableTarget(name: "sluice-library-example", dependencies: ["Sluice"], path: "Examples/LibraryExample"),

        // MARK: - Tests

        .target(name: "SluiceTesting", dependencies: ["SluiceCore", "SluiceSync"]),
        .testTarget(name: "SluiceYAMLTests", dependencies: ["SluiceYAML"]),
        .testTarget(name: "SluiceRegexTests", dependencies: ["SluiceRegex"]),
        .testTarget(name: "SluiceCoreTests", dependencies: ["SluiceCore", "SluiceTesting"]),
        // Uses the Sluice product's public API only, as a program that depends on it would.
        .testTarget(name: "SluiceLibraryTests", dependencies: ["Sluice"]),
        .testTarget(
            name: "SluiceAPITests",
            dependencies: ["SluiceAPI", "SluiceCLI", "SluiceCore", "SluiceTesting", "SluiceWebSocket"]),
        .testTarget(
            name: "SluiceComponentsTests",
            dependencies: [
                "SluiceCore", "SluiceSources", "SluiceTransforms", "SluiceSinks", "SluiceTesting", "SluiceWebSocket",
                "SluiceYAML", "SluiceSync", "SluiceKafka",
            ]
        ),
        .testTarget(
            name: "SluiceEndToEndTests",
            dependencies: ["SluiceCLI", "SluiceCore", "SluiceSync", "SluiceTesting"],
            // Independent peers in Python, run by the tests as separate processes.
            exclude: ["Peers"]
        ),
    ]
)

// The fuzz targets (one executable driving libFuzzer) exist only when `scripts/fuzz` builds them with
// `-sanitize=fuzzer`, so that a plain build never needs the fuzzer runtime.
if Context.environment["SLUICE_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(name: "SluiceFuzz", dependencies: ["SluiceCLI", "SluiceCore"], path: "Tests/Fuzz/SluiceFuzz"))
}

// Strict settings in one place: Swift 6 mode (complete concurrency checking) comes from the tools
// version; these upcoming features keep existentials, imports and visibility explicit everywhere.
for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("InternalImportsByDefault"),
            .enableUpcomingFeature("MemberImportVisibility"),
        ]
}
