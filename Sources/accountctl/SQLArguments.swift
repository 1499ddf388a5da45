import AccountdProtocol
import ArgumentParser

/// The arguments of `accountctl query` and `accountctl exec`: the account, the statement and
/// its parameters.
///
/// Each PARAM binds the next `?`: it is read as JSON when it parses as JSON (`42`, `1.5`,
/// `null`, `true`, `"text"`, `{"base64":"AAE="}` for a blob), else taken as text as it is.
/// So `hello` is the text hello, and `'"42"'` (quoted for the shell) is the text 42.
struct SQLArguments: ParsableArguments {
    @Option(help: ArgumentHelp("The account to act on (default: the active account).", valueName: "account"))
    var account: String?

    @Flag(
        name: .customLong("no-migrate"),
        help: "Run on the account at its stored version, without migrating it first (admin): to fix data a migration cannot take.")
    var noMigrate = false

    @Argument(help: "One SQL statement.")
    var sql: String

    @Argument(help: "Values for its ? parameters, in order: JSON when they parse as JSON, else text.")
    var parameters: [String] = []

    mutating func validate() throws {
        if let account { try validateAccountName(account) }
        _ = try values()
    }

    /// The parameters as SQL values.
    ///
    /// - Throws: `ValidationError` for a JSON array or an object other than a blob.
    func values() throws -> [SQLValue] {
        try parameters.enumerated().map { index, text in
            if text.count > 1, text.drop(while: { $0 == "-" }).allSatisfy(\.isASCII), Int64(text) == nil,
                text.drop(while: { $0 == "-" }).allSatisfy(\.isNumber), text.filter({ $0 == "-" }).count <= 1
            {
                throw ValidationError(
                    "PARAM \(index + 1) (\(text)) is an integer outside 64 bits; write it as a real (\(text).0) or quote it as JSON text ('\"\(text)\"')")
            }
            let json = (try? JSONParser.parse(text)) ?? .string(text)
            do {
                return try SQLValue(json: json, parameter: "PARAM \(index + 1)")
            } catch {
                throw ValidationError("\((error as? ProtocolError)?.message ?? "\(error)"); give a number, null, true/false, text, or {\"base64\":\"...\"} for a blob")
            }
        }
    }

    var statement: SQLStatement {
        get throws { SQLStatement(sql: sql, parameters: .positional(try values())) }
    }
}

extension SQLValue {
    /// The value as `accountctl query` prints it in a table: `NULL`, numbers, text with its
    /// control characters escaped (``Output/terminalSafe(_:)``; `--json` gives it exactly),
    /// a blob as `x'0a1b'` (as the sqlite3 shell writes one).
    var cell: String {
        switch self {
        case .null: "NULL"
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .text(let s): Output.terminalSafe(s)
        case .textBytes(let bytes): Output.terminalSafe(String(decoding: bytes, as: UTF8.self))
        case .blob(let bytes):
            "x'" + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "'"
        }
    }
}
