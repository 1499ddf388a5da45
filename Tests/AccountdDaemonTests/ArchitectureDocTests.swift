import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// docs/ARCHITECTURE.md names real things: every source file it names exists, and every
/// type and member its request path names (`Dispatcher.respond`, `ConnectionWriter`, ...)
/// is declared in `Sources/`. A rename or a removal that leaves the document behind fails here.
@Suite struct ArchitectureDocTests {
    static let document = Repository.root + "/docs/ARCHITECTURE.md"

    @Test func everyFileTheDocumentNamesExists() throws {
        let text = try String(contentsOfFile: Self.document, encoding: .utf8)
        let files = Self.files(under: ["Sources", "Tests", "Fuzz"])
        let named = Set(Self.matches(of: #"[A-Za-z0-9_/+.-]+\.swift"#, in: text))
        #expect(!named.isEmpty)
        let missing = named.filter { name in
            // `+Status.swift` after `SwitchService+Startup.swift` is short for `SwitchService+Status.swift`.
            let suffix = name.hasPrefix("+") ? name : "/" + name
            // A file at the repository's root (`Package.swift`) is named by itself.
            return !files.contains { $0 == name || $0.hasSuffix(suffix) }
                && !FileManager.default.fileExists(atPath: Repository.root + "/" + name)
        }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md names files that do not exist: \(missing.sorted())")
    }

    @Test func everyTypeAndMemberOfTheRequestPathIsDeclared() throws {
        let text = try String(contentsOfFile: Self.document, encoding: .utf8)
        let start = try #require(text.range(of: "## The path of one request"))
        let end = try #require(text.range(of: "\n## ", range: start.upperBound..<text.endIndex))
        let section = String(text[start.upperBound..<end.lowerBound])
        let sources = Self.files(under: ["Sources"]).compactMap { try? String(contentsOfFile: Repository.root + "/" + $0, encoding: .utf8) }
            .joined(separator: "\n")
        let names = Set(Self.matches(of: #"`[A-Z][A-Za-z0-9]+(\.[A-Za-z][A-Za-z0-9]*)?`"#, in: section))
        #expect(names.count > 10)
        // Words of the protocol (method and error names), of libraries, and the targets' names, not of Sources/.
        let targets = (try? FileManager.default.contentsOfDirectory(atPath: Repository.root + "/Sources")) ?? []
        let words = Set(AccountdProtocol.Method.allCases.map(\.rawValue) + ErrorName.accountdErrors.map(\.shortName) + ["MetricsSystem"] + targets)
        var missing: [String] = []
        for name in names {
            let parts = name.dropFirst().dropLast().split(separator: ".").map(String.init)
            if words.contains(parts[0]) || parts.last == "swift" { continue }
            let declared = { (word: String, kinds: String) in
                sources.range(of: #"\b(\#(kinds))\s+\#(word)\b"#, options: .regularExpression) != nil
            }
            guard declared(parts[0], "struct|class|enum|protocol|actor|typealias|extension") else {
                missing.append(name)
                continue
            }
            if parts.count == 2, !declared(parts[1], "func|var|let|case|struct|class|enum|typealias") { missing.append(name) }
        }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md's request path names what Sources/ does not declare: \(missing.sorted())")
    }

    /// The paths of the files under `folders`, relative to the repository's root.
    static func files(under folders: [String]) -> [String] {
        folders.flatMap { folder in
            (FileManager.default.enumerator(atPath: Repository.root + "/" + folder)?.allObjects as? [String] ?? []).map { folder + "/" + $0 }
        }
    }

    /// Every match of `pattern` in `text`.
    static func matches(of pattern: String, in text: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range, in: text).map { String(text[$0]) }
        }
    }
}
