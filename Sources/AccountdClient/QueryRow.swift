import AccountdProtocol

/// One row of a `Query`: its values, by position or by column name.
///
/// ```swift
/// struct Note: Decodable { var id: Int64; var title: String; var body: String? }
/// for try await row in await client.query("SELECT id, title, body FROM notes WHERE id > ?", [.integer(10)]) {
///     let note = try row.decode(Note.self)
/// }
/// ```
public struct QueryRow: Sendable, Hashable {
    /// The result's column names, in order.
    public let columns: [String]
    /// The values, one per column.
    public let values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The value of the first column named `column`, or nil when there is none.
    public subscript(column: String) -> SQLValue? {
        columns.firstIndex(of: column).map { values[$0] }
    }

    /// The row as a `Decodable` type whose coding keys are column names: `Int`, `Int64`,
    /// `Double`, `Bool` (from an integer), `String`, `[UInt8]` (a blob), any `RawRepresentable`
    /// of those, and optionals for `NULL`.
    ///
    /// - Throws: `DecodingError` naming the column that is missing or of another type.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: QueryRowDecoder(row: self))
    }
}
