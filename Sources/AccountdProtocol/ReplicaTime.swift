/// A point in time as `Restore {at}` takes it: RFC 3339 (`2026-01-31T09:30:00Z`,
/// `2026-01-31T10:30:00.250+01:00`), read without Foundation.
public struct ReplicaTime: Sendable, Hashable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z.
    public let secondsSince1970: Double
    /// The text as given.
    public let text: String

    /// Reads `text`; nil when it is not an RFC 3339 date and time with a zone (`Z` or `±HH:MM`).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + digits] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += digits
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2), expect("Tt "),
            let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...Self.days(inMonth: month, of: year)).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        if expect("Zz") {
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2), expect(":"), let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        // A leap second (:60) is only ever the last second of a UTC day.
        guard second < 60 || ((hour * 60 + minute - offset / 60) % 1440 + 1440) % 1440 == 1439 else { return nil }
        // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        secondsSince1970 = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        self.text = text
    }

    public var description: String { text }

    /// The days of `month` (1 to 12) in `year` of the Gregorian calendar.
    public static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year.isMultiple(of: 4) && (!year.isMultiple(of: 100) || year.isMultiple(of: 400)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Why `text`, written as an RFC 3339 time, names no time that exists (a day past its
    /// month's end, such as `2026-11-31` or `2026-02-30`, or a leap second `:60` anywhere but
    /// the last second of a UTC day); nil when it is not that kind of mistake.
    public static func impossibility(in text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 19, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? { Int(String(decoding: bytes[range], as: UTF8.self)) }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), (1...12).contains(month) else { return nil }
        let last = Self.days(inMonth: month, of: year)
        if day > last {
            return "\(String(decoding: bytes[0..<10], as: UTF8.self)) is not a date: month \(month) of \(year) has \(last) days"
        }
        if bytes[17...18].elementsEqual("60".utf8) {
            return "second 60 exists only as a leap second, the last second of a UTC day (23:59:60Z)"
        }
        return nil
    }
}
