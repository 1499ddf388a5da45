import Testing
@testable import AccountdProtocol

/// `Restore {at}`: RFC 3339 times, read without Foundation.
@Suite struct ReplicaTimeTests {
    static let examples: [(String, Double)] = [
        ("1970-01-01T00:00:00Z", 0), ("2026-01-31T09:30:00Z", 1_769_851_800), ("2026-01-31T10:30:00+01:00", 1_769_851_800),
        ("2026-01-31T09:30:00.250Z", 1_769_851_800.25), ("2024-02-29T23:59:59-00:30", 1_709_251_199 + 1800), ("2000-03-01t00:00:00z", 951_868_800),
    ]

    @Test(arguments: examples)
    func anRFC3339TimeIsRead(text: String, seconds: Double) throws {
        let time = try #require(ReplicaTime(text))
        #expect(abs(time.secondsSince1970 - seconds) < 0.0005, "\(text): \(time.secondsSince1970)")
        #expect(time.text == text)
    }

    @Test(arguments: ["", "10m", "2026-01-31", "2026-01-31T09:30:00", "2026-13-01T00:00:00Z", "2026-01-31T09:30:00.Z", "2026-01-31T09:30:00Zjunk",
        "2026-01-31T25:00:00Z", "2026-01-31T09:30:00+0100"])
    func anythingElseIsRefused(text: String) {
        #expect(ReplicaTime(text) == nil)
    }

    /// Hostile33c #8: day 31 of November and day 30 of February rolled over into the next
    /// month, and a restore happened at a time no one asked for.
    @Test(arguments: [
        ("2026-11-31T10:00:00Z", "month 11 of 2026 has 30 days"), ("2026-02-30T00:00:00Z", "month 2 of 2026 has 28 days"),
        ("2025-02-29T00:00:00Z", "month 2 of 2025 has 28 days"), ("2100-02-29T00:00:00Z", "month 2 of 2100 has 28 days"),
        ("2026-11-26T18:59:60Z", "leap second"), ("2026-12-31T23:59:60+01:00", "leap second"),
    ])
    func aTimeThatDoesNotExistIsRefusedSayingWhy(text: String, why: String) throws {
        #expect(ReplicaTime(text) == nil)
        #expect(ReplicaTime.impossibility(in: text)?.contains(why) == true, "\(String(describing: ReplicaTime.impossibility(in: text)))")
        let request = Request(method: .restore, parameters: Parameters([("account", "alice"), ("at", .string(text))]))
        do {
            _ = try Command(request)
            Issue.record("Restore {at: \(text)} was accepted")
        } catch {
            #expect("\(error)".contains(why), "\(error)")
        }
    }

    @Test(arguments: ["2024-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2016-12-31T23:59:60Z", "2017-01-01T00:59:60+01:00", "2026-04-30T00:00:00Z"])
    func theLastDayOfAMonthAndALeapSecondAreRead(text: String) {
        #expect(ReplicaTime(text) != nil)
    }

    @Test func restoreTakesEitherASnapshotOrATime() throws {
        let both = Request(method: .restore, parameters: Parameters([("account", "alice"), ("snapshot", "s"), ("at", "2026-01-31T09:30:00Z")]))
        #expect(throws: ProtocolError.self) { try Command(both) }
        let bad = Request(method: .restore, parameters: Parameters([("account", "alice"), ("at", "yesterday")]))
        #expect(throws: ProtocolError.self) { try Command(bad) }
    }
}
