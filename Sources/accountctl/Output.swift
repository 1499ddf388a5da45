import AccountdProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Formatting for humans (tables, key: value blocks, sizes) and for programs (`--json`).
enum Output {
    /// Prints one reply's parameters as a compact JSON line, as `--json` asks.
    static func json(_ parameters: JSONValue) {
        print(parameters.serialized())
    }

    /// `text` safe to print on a terminal: each control character (a newline, an escape,
    /// a carriage return) written as `\u{1B}`, so stored data can neither drive the
    /// terminal nor pass for another line. A backslash is doubled, so the form is unambiguous.
    static func terminalSafe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "\\" }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                out += "\\\\"
            } else if scalar.properties.generalCategory == .control {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Pushes buffered stdout out now, for output that a reader follows live.
    static func flush() {
        fflush(nil)  // every output stream; only stdout is buffered here
    }

    /// Prints `pairs` as an aligned `key: value` block.
    static func fields(_ pairs: [(String, String)]) {
        let width = pairs.map { $0.0.count }.max() ?? 0
        for (key, value) in pairs {
            print(pad(key + ":", to: width + 1) + " " + value)
        }
    }

    /// A byte count in binary units: `512 B`, `1.5 KiB`, `12 MiB`.
    static func size(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let text = value < 10 ? String((value * 10).rounded(.down) / 10) : String(Int64(value.rounded(.down)))
        return "\(text) \(units[unit])"
    }

    /// An optional number, or `-` when it is nil.
    static func text(_ value: Int?) -> String {
        value.map(String.init) ?? "-"
    }

    /// An integer with thousands separators: `12,345`.
    static func count(_ number: Int64) -> String {
        let digits = String(number.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return number < 0 ? "-" + out : out
    }

    /// A duration: `412 ms`, `3.2 s`.
    static func duration(milliseconds: Double) -> String {
        if milliseconds < 1 { return "<1 ms" }
        if milliseconds < 1000 { return "\(Int(milliseconds.rounded())) ms" }
        return "\((milliseconds / 100).rounded() / 10) s"
    }

    /// A reply value as plain text: strings as they are, null or missing as `-`,
    /// anything else as compact JSON.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: "-"
        case .string(let text)?: text
        case .int(let number)?: String(number)
        case .bool(let flag)?: flag ? "yes" : "no"
        case let other?: other.serialized()
        }
    }

    /// Pads `text` with spaces on the right to `width` characters.
    static func pad(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// Pads `text` with spaces on the left to `width` characters.
    static func padLeft(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

/// A table with a header row and aligned columns, for human output.
struct Table {
    /// The column titles, e.g. `ACCOUNT`, `SIZE`.
    var headers: [String]
    /// Which columns are right-aligned (numbers and sizes).
    var rightAligned: Set<Int> = []
    /// The rows, each with one cell per header.
    var rows: [[String]] = []

    /// Prints the table to stdout, two spaces between columns.
    func print() {
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        for row in [headers] + rows {
            var cells: [String] = []
            for (column, cell) in row.enumerated() {
                let isLast = column == row.count - 1
                if rightAligned.contains(column) {
                    cells.append(Output.padLeft(cell, to: widths[column]))
                } else {
                    cells.append(isLast ? cell : Output.pad(cell, to: widths[column]))
                }
            }
            Swift.print(cells.joined(separator: "  "))
        }
    }
}

/// Stderr: messages, and the state of the progress line.
enum Terminal {
    /// Whether stderr is a terminal; progress is drawn only then.
    static let stderrIsTerminal = isatty(2) == 1

    /// Whether a progress line is on screen now.
    ///
    /// `accountctl` runs on one thread, and nothing reads this from a signal handler,
    /// so the unchecked access cannot race.
    nonisolated(unsafe) static var progressShown = false

    /// Writes `message` and a newline to stderr, clearing any progress line first.
    static func printError(_ message: String) {
        clearProgress()
        write(message + "\n")
    }

    /// Erases the progress line, if one is drawn.
    static func clearProgress() {
        guard progressShown else { return }
        write("\r\u{1B}[2K")
        progressShown = false
    }

    /// Writes `text` to stderr as it is, unbuffered.
    static func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { raw in
                #if canImport(Glibc)
                Glibc.write(2, raw.baseAddress!, raw.count)
                #else
                Darwin.write(2, raw.baseAddress!, raw.count)
                #endif
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// The terminal's width in columns, or 80.
    static var columns: Int {
        var size = winsize()
        guard ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}

/// Exits the process with `status`, flushing stdout first.
func terminate(_ status: Int32) -> Never {
    exit(status)
}
