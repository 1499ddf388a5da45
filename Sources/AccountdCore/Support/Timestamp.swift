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
        let year = Int(fields.tm_year) + 1900
        if (0...9999).contains(year) {
            // Every group has its width: the 24 bytes are written in place, not joined from
            // thirteen strings (a commit of a Set takes one of these).
            return String(unsafeUninitializedCapacity: 24) { text in
                func put(_ value: Int, _ width: Int, at end: Int) {
                    var value = value
                    for index in stride(from: end - 1, through: end - width, by: -1) {
                        text[index] = UInt8(ascii: "0") + UInt8(value % 10)
                        value /= 10
                    }
                }
                put(year, 4, at: 4)
                text[4] = UInt8(ascii: "-")
                put(Int(fields.tm_mon) + 1, 2, at: 7)
                text[7] = UInt8(ascii: "-")
                put(Int(fields.tm_mday), 2, at: 10)
                text[10] = UInt8(ascii: "T")
                put(Int(fields.tm_hour), 2, at: 13)
                text[13] = UInt8(ascii: ":")
                put(Int(fields.tm_min), 2, at: 16)
                text[16] = UInt8(ascii: ":")
                put(Int(fields.tm_sec), 2, at: 19)
                text[19] = UInt8(ascii: ".")
                put(Int(fraction / 1000), 3, at: 23)
                text[23] = UInt8(ascii: "Z")
                return 24
            }
        }
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
