import Foundation
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
            // The mark is on one of the duplicated keys: the others are at its column.
            let keys = duplicates.sorted().map { key -> String in
                let lines = linesDefining(key, in: text, likeLine: context.mark.line)
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

    /// The lines (from 1) on which `key:` is written at the column it has on line `anchor`
    /// (after spaces or a `- `, the key bare or quoted); empty when `anchor` does not hold it.
    private static func linesDefining(_ key: String, in text: String, likeLine anchor: Int) -> [Int] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard anchor >= 1, anchor <= lines.count, let column = keyColumn(key, in: lines[anchor - 1]) else { return [] }
        return lines.indices.filter { keyColumn(key, in: lines[$0]) == column }.map { $0 + 1 }
    }

    /// Where `key:` begins on `line` (in characters), when the line is that key's entry.
    private static func keyColumn(_ key: String, in line: Substring) -> Int? {
        let indent = line.prefix { $0 == " " || $0 == "-" || $0 == "\t" }
        var rest = line.dropFirst(indent.count)
        if let quote = rest.first, quote == "\"" || quote == "'" {
            guard rest.dropFirst().hasPrefix(key + String(quote)) else { return nil }
            rest = rest.dropFirst(key.count + 2)
        } else {
            guard rest.hasPrefix(key) else { return nil }
            rest = rest.dropFirst(key.count)
        }
        return rest.drop { $0 == " " }.hasPrefix(":") ? indent.count : nil
    }
}
