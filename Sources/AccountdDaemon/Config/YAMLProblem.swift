import Yams

/// Why a config file is not valid YAML, said by line and column, never by quoting the file.
///
/// Yams's own text of an error quotes the offending line, and for a key written twice the
/// whole mapping it is in: the config file holds the replica's URL, whose password must
/// never reach stderr or the log (hostile33c #11). These words name the line, the column
/// and the keys, and nothing of the values.
enum YAMLProblem {
    /// `config file PATH is not valid YAML: ...`, quoting nothing of `text`.
    static func failure(_ error: any Error, file: String, text: String) -> SettingsLoader.Failure {
        SettingsLoader.Failure(description: "config file \(file) is not valid YAML: \(describe(error, text: text)); fix it and try again")
    }

    /// What is wrong, by line and column; libyaml's own words for the problem and what it was
    /// reading (fixed phrases such as "while scanning a quoted scalar"), never the file's text.
    static func describe(_ error: any Error, text: String) -> String {
        guard let problem = error as? YamlError else { return "it cannot be parsed" }
        switch problem {
        case let .scanner(context, said, mark, _), let .parser(context, said, mark, _), let .composer(context, said, mark, _):
            let reading = context.map { "\($0.text) from line \($0.mark.line), " } ?? ""
            return "line \(mark.line), column \(mark.column): \(reading)\(said)"
        case let .reader(said, offset, _, _):
            return "\(said)" + (offset.map { " at line \(line(atOffset: $0, in: text))" } ?? "")
        case let .duplicatedKeysInMapping(duplicates, context):
            // The mark is one of the duplicated keys: the others are at its column.
            let keys = duplicates.sorted().map { key -> String in
                let lines = linesDefining(key, in: text, atColumn: context.mark.column)
                return "'\(key)' (" + (lines.count > 1 ? "lines \(lines.map(String.init).joined(separator: ", "))" : "line \(context.mark.line)") + ")"
            }
            return "a key is written more than once in one mapping: \(keys.joined(separator: ", ")); each key may appear once in its section"
        case .dataCouldNotBeDecoded:
            return "it is not UTF-8 text"
        default:
            return "it cannot be parsed"
        }
    }

    /// The line (from 1) of byte `offset` of `text`.
    private static func line(atOffset offset: Int, in text: String) -> Int {
        1 + text.utf8.prefix(max(0, offset)).filter { $0 == UInt8(ascii: "\n") }.count
    }

    /// The lines (from 1) on which `key:` is written at `column` (from 1; after spaces or a
    /// `- `, the key bare or quoted).
    private static func linesDefining(_ key: String, in text: String, atColumn column: Int) -> [Int] {
        var found: [Int] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard raw.count >= column else { continue }
            let before = raw.prefix(column - 1)
            guard before.allSatisfy({ $0 == " " || $0 == "-" }) else { continue }
            var line = raw.dropFirst(column - 1)
            if let quote = line.first, quote == "\"" || quote == "'" {
                guard line.dropFirst().hasPrefix(key + String(quote)) else { continue }
                line = line.dropFirst(key.count + 2)
            } else {
                guard line.hasPrefix(key) else { continue }
                line = line.dropFirst(key.count)
            }
            if line.drop(while: { $0 == " " }).hasPrefix(":") { found.append(index + 1) }
        }
        return found
    }
}
