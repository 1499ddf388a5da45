/// The lines of a bundle file as its author wrote them, whatever the editor saved.
///
/// Swift reads `"\r\n"` as one `Character`, so splitting a Windows file on `"\n"` finds
/// a single line, and every directive after the first line would go unread. A leading
/// byte-order mark is not part of the first line either.
enum BundleText {
    /// `text` cut at each `\n` or `\r\n`, without the line ends and without a leading BOM.
    static func lines(_ text: String) -> [Substring] {
        let body = text.first == "\u{FEFF}" ? text.dropFirst() : Substring(text)
        return body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
    }

    /// The first line of `text` (``lines(_:)``).
    static func firstLine(_ text: String) -> Substring {
        lines(text).first ?? ""
    }
}
