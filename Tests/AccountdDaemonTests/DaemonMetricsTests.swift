import AccountdProtocol
import AccountdTestSupport
import Testing

@testable import AccountdDaemon

/// Each set of daemon parts counts in its own registry, as the responder's one funnel
/// sees requests: refused as they are decoded, answered at once, or run in a task.
@Suite struct DaemonMetricsTests {
    @Test func eachDaemonCountsInItsOwnRegistry() async throws {
        let first = TestDirectory()
        let second = TestDirectory()
        try await DaemonParts.with(dataRoot: first.path) { one in
            try await DaemonParts.with(dataRoot: second.path) { other in
                for _ in 0..<2 { _ = try await DispatcherTests.respond(one, "ping") }
                #expect(try await DispatcherTests.refusal(one, "switch ../etc")?.error == .invalidAccountName)
                #expect(try await DispatcherTests.run(one, "metrics").first?.error == nil)
                let text = one.metrics.registry.emitToString()
                #expect(text.contains(#"accountd_requests_total{method="Ping",outcome="ok"} 2"#), "\(text)")
                #expect(text.contains(#"accountd_requests_total{method="Switch",outcome="InvalidAccountName"} 1"#), "\(text)")
                #expect(text.contains(#"accountd_requests_total{method="Metrics",outcome="ok"} 1"#), "\(text)")
                // The other daemon's counters are all still at zero.
                let others = other.metrics.registry.emitToString().split(separator: "\n").filter { $0.hasPrefix("accountd_requests_total{") }
                #expect(!others.isEmpty && others.allSatisfy { $0.hasSuffix(" 0") }, "\(others)")
            }
        }
    }
}
