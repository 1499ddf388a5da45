#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-line progress display on stderr for long work: switch, migrate, export.
///
/// It draws only when stderr is a terminal (never into a pipe or a log file), redraws
/// at most ten times a second, and is erased before any other message is printed.
struct Progress {
    /// What is being done, e.g. `migrating alice`.
    let label: String
    private let enabled: Bool
    private var lastDraw: UInt64 = 0
    /// When the display was made: the start of the rate and of the time left.
    private let began = Self.monotonicNanoseconds()
    private static let barWidth = 24
    private static let minimumInterval: UInt64 = 100_000_000

    /// A progress line that starts empty.
    ///
    /// - Parameter shown: false to never draw, as with `--json`, whose lines would
    ///   interleave with the bar on one terminal.
    init(_ label: String, shown: Bool = true) {
        self.label = label
        self.enabled = shown && Terminal.stderrIsTerminal
    }

    /// Shows `done` out of `total` with a bar, or a plain count when `total` is unknown.
    ///
    /// - Parameters:
    ///   - detail: a few words after the numbers, such as a migration's name.
    ///   - paced: also show the rate since the display was made, and the time left.
    ///   - force: draw even if the last draw was under 100 ms ago.
    mutating func update(done: Int64, total: Int64?, detail: String = "", paced: Bool = false, force: Bool = false) {
        guard shouldDraw(force: force) else { return }
        var line = label
        if let total, total > 0 {
            let fraction = min(1, max(0, Double(done) / Double(total)))
            let filled = Int((fraction * Double(Self.barWidth)).rounded(.down))
            line += " [" + String(repeating: "#", count: filled)
                + String(repeating: "-", count: Self.barWidth - filled) + "] \(done)/\(total)"
        } else {
            line += ": " + Output.count(done)
        }
        if paced { line += pace(done: done, total: total) }
        if !detail.isEmpty { line += " " + detail }
        draw(line)
    }

    /// Shows `status` after the label, e.g. `3.2 MiB received`, with no bar.
    ///
    /// `status` is only worked out when the line is drawn, so a caller may pass it for
    /// every piece of a long export at no cost.
    mutating func update(status: @autoclosure () -> String, force: Bool = false) {
        guard shouldDraw(force: force) else { return }
        draw(label + ": " + status())
    }

    /// ` 41/s, 2:05 left`: the rate so far and, with a total, the time the rest takes at it.
    private func pace(done: Int64, total: Int64?) -> String {
        let seconds = Double(lastDraw &- began) / 1e9
        guard done > 0, seconds > 0 else { return "" }
        let rate = Double(done) / seconds
        var text = rate >= 10 ? " \(Int(rate.rounded()))/s" : " \((rate * 10).rounded() / 10)/s"
        if let total, total > done {
            let left = Int((Double(total - done) / rate).rounded(.up))
            text += ", " + (left >= 3600 ? "\(left / 3600)h\(String(format2: left / 60 % 60))m" : "\(left / 60):\(String(format2: left % 60))") + " left"
        }
        return text
    }

    /// Erases the line.
    func clear() {
        Terminal.clearProgress()
    }

    private mutating func shouldDraw(force: Bool) -> Bool {
        guard enabled else { return false }
        let now = Self.monotonicNanoseconds()
        guard force || now &- lastDraw >= Self.minimumInterval else { return false }
        lastDraw = now
        return true
    }

    private func draw(_ text: String) {
        var line = text
        let width = Terminal.columns - 1
        if line.count > width { line = String(line.prefix(max(0, width - 1))) + "…" }
        Terminal.write("\r\u{1B}[2K" + line)
        Terminal.progressShown = true
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

extension String {
    /// A number from 0 to 99 in two digits: `07`.
    fileprivate init(format2 number: Int) {
        self = number < 10 ? "0\(number)" : "\(number)"
    }
}
