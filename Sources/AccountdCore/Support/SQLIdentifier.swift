/// SQL identifiers written into statements the daemon builds.
extension String {
    /// The string as a double-quoted SQL identifier, with every `"` inside it doubled:
    /// `my "table"` becomes `"my ""table"""`.
    ///
    /// GRDB's `quotedDatabaseIdentifier` wraps the name in quotes without doubling the
    /// quotes inside it, so a table named `a"b` breaks the statement; every identifier
    /// the daemon splices into SQL goes through this instead.
    var quotedIdentifier: String {
        "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
