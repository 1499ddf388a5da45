import Foundation

/// The declarations of a varlink interface file, read just far enough for tests to
/// compare it with the code: each method's parameter and reply field names, each
/// type's and each error's field names.
///
/// The grammar read is varlink's: `# comments`, `type Name (fields)`, `method
/// Name(fields) -> (fields)`, `error Name (fields)`, fields `name: type` separated by
/// commas. Nested records are named types, as the interface file writes them.
struct VarlinkInterfaceFile {
    /// A method's parameter and reply field names, in order.
    struct Method: Equatable {
        var parameters: [String]
        var replies: [String]
    }

    /// The text has no `interface NAME` line.
    struct NoInterface: Error {}

    var name: String
    var methods: [String: Method] = [:]
    var types: [String: [String]] = [:]
    var errors: [String: [String]] = [:]

    init(_ text: String) throws {
        let code = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "" }
            .joined(separator: "\n")
        guard let interface = try Self.matches(#"interface\s+([A-Za-z0-9.\-]+)"#, in: code).first?.first else {
            throw NoInterface()
        }
        name = interface
        for groups in try Self.matches(#"method\s+([A-Za-z0-9]+)\s*\(([^)]*)\)\s*->\s*\(([^)]*)\)"#, in: code) {
            methods[groups[0]] = Method(parameters: Self.fields(groups[1]), replies: Self.fields(groups[2]))
        }
        for groups in try Self.matches(#"type\s+([A-Za-z0-9]+)\s*\(([^)]*)\)"#, in: code) {
            types[groups[0]] = Self.fields(groups[1])
        }
        for groups in try Self.matches(#"error\s+([A-Za-z0-9]+)\s*\(([^)]*)\)"#, in: code) {
            errors[groups[0]] = Self.fields(groups[1])
        }
    }

    /// The field names of a field list: the words before each `:`.
    private static func fields(_ list: String) -> [String] {
        list.split(separator: ",").compactMap { field in
            let name = field.split(separator: ":").first?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return name.isEmpty ? nil : name
        }
    }

    /// The capture groups of every match of `pattern` in `text`.
    private static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let expression = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).map { match in
            (1..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }
}
