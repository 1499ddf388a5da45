import Foundation
import Testing

@testable import AccountdCore

/// The timestamps in history rows, `state.json` and snapshot names.
@Suite struct TimestampTests {
    @Test(arguments: [
        (1_763_705_400.123, "2025-11-21T06:10:00.123Z"),
        (1_763_705_400.0, "2025-11-21T06:10:00.000Z"),
        (1_763_705_400.9999, "2025-11-21T06:10:00.999Z"),
        (951_782_400.5, "2000-02-29T00:00:00.500Z"),
        (-0.25, "1969-12-31T23:59:59.750Z"),
    ])
    func aDateIsWrittenInUTCToTheMillisecond(seconds: Double, expected: String) {
        #expect(Timestamp.string(Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test func theCompactFormHasNoDashesOrColons() {
        #expect(Timestamp.compact(Date(timeIntervalSince1970: 1_763_705_400.123)) == "20251121T061000.123Z")
    }

    @Test func whatIsWrittenReadsBackAsTheSameMillisecond() throws {
        let now = Date()
        let read = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(Timestamp.string(now))
        #expect(abs(read.timeIntervalSince(now)) < 0.001)
    }
}
