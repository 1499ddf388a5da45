import Foundation

/// Timestamps as accountd writes them: ISO 8601 in UTC with milliseconds,
/// `2026-11-21T06:10:00.123Z`.
///
/// Written from the C library's `gmtime_r`: a history row, a snapshot's name and every
/// Switch's `state.json` take one, and a general date formatter looks up time-zone data
/// each time.
enum Timestamp {
    static func now() -> String { string(Date()) }

    /// `date` in UTC, to the millisecond (the fraction cut, not rounded).
    static func string(_ date: Date) -> String {
        // Whole microseconds first, so that a time given as .123 s, stored as .12299999, stays .123.
        let microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        var (seconds, fraction) = microseconds.quotientAndRemainder(dividingBy: 1_000_000)
        if fraction < 0 {  // before 1970: borrow a second
            seconds -= 1
            fraction += 1_000_000
        }
        var time = time_t(seconds)
        var fields = tm()
        gmtime_r(&time, &fields)
        return padded(fields.tm_year + 1900, 4) + "-" + padded(fields.tm_mon + 1, 2) + "-" + padded(fields.tm_mday, 2) + "T"
            + padded(fields.tm_hour, 2) + ":" + padded(fields.tm_min, 2) + ":" + padded(fields.tm_sec, 2) + "."
            + padded(Int32(fraction / 1000), 3) + "Z"
    }

    /// A compact form for file names: `20261121T061000.123Z`.
    static func compact(_ date: Date) -> String {
        string(date).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }

    private static func padded(_ value: Int32, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
