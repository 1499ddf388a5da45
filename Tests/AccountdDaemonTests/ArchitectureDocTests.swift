import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// docs/ARCHITECTURE.md names real things, and a rename or a removal that leaves the
/// document behind fails here (issue 32: one suite, every check):
///
/// - every Swift file it names, in prose or in a diagram, is a file under `Sources/`,
///   `Tests/` or `Fuzz/` (or at the repository's root);
/// - every backticked type name in its prose is declared under `Sources/` (or is a target,
///   a wire name, or one of the few library types it names);
/// - every type and member its request path names (`Dispatcher.respond`,
///   `ConnectionWriter`, ...) is declared in `Sources/`.
@Suite struct ArchitectureDocTests {
    static let document = Repository.root + "/docs/ARCHITECTURE.md"

    /// Types from the libraries the daemon uses that the document names.
    static let libraryTypes: Set<String> = [
        "MultiThreadedEventLoopGroup", "NIOThreadPool", "EmbeddedChannel",  // swift-nio
        "ServiceGroup",  // swift-service-lifecycle
        "MetricsSystem",  // swift-metrics
        "Mutex", "Atomic",  // Synchronization
        "Thread",  // Foundation: named as what the daemon does not use
    ]

    // MARK: Files

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

    // MARK: Backticked names in the prose

    @Test func everyFileAndTypeItNamesExists() throws {
        let text = try String(contentsOfFile: Self.document, encoding: .utf8)
        let sources = Self.files(under: ["Sources"])
        let files = sources + Self.files(under: ["Tests"])
        let known = try Self.knownNames(sources: sources)
        let spans = Self.backticked(text)
        #expect(spans.count > 50, "the document's names were not found: \(spans.count)")
        let missing = spans.compactMap { Self.missing($0, files: files, known: known) }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md names what does not exist: \(missing.joined(separator: ", "))")
    }

    /// The check itself: a name that does not exist is caught, in each form the document uses.
    @Test(arguments: ["Server/Nowhere.swift", "Nowhere.swift", "+Nowhere.swift", "NoSuchType", "NoSuchType.member", "NoSuchType<Int>"])
    func aNameThatDoesNotExistIsCaught(_ span: String) throws {
        let sources = Self.files(under: ["Sources"])
        let known = try Self.knownNames(sources: sources)
        #expect(Self.missing(span, files: sources, known: known) != nil)
        #expect(Self.missing("Server/Connection.swift", files: sources, known: known) == nil)
        #expect(Self.missing("Dispatcher.admit", files: sources, known: known) == nil)
    }

    // MARK: The request path

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

    // MARK: Helpers

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

    /// The names a backticked type may be: declared types, targets, method and error names.
    static func knownNames(sources: [String]) throws -> Set<String> {
        var known = libraryTypes
        let declaration = #/\b(?:struct|class|enum|actor|protocol|typealias)\s+([A-Z]\w*)/#
        let quoted = #/"([A-Z]\w*)"/#
        for path in sources where path.hasSuffix(".swift") {
            let text = try String(contentsOfFile: Repository.root + "/" + path, encoding: .utf8)
            for match in text.matches(of: declaration) { known.insert(String(match.1)) }
            // The wire's method and error names (`Switch`, `AccountBusy`).
            if path.hasSuffix("/Method.swift") || path.hasSuffix("/ErrorName.swift") {
                for match in text.matches(of: quoted) { known.insert(String(match.1)) }
            }
        }
        // The targets: one folder each under Sources/.
        let targets = try FileManager.default.contentsOfDirectory(atPath: Repository.root + "/Sources")
        return known.union(targets)
    }

    /// The backticked spans of `text`, outside fenced code blocks (the diagrams).
    static func backticked(_ text: String) -> [String] {
        let prose = text.replacing(#/```[\s\S]*?```/#, with: "")
        return prose.matches(of: #/`([^`\n]+)`/#).map { String($0.1) }
    }

    /// What `span` names that does not exist, or nil.
    static func missing(_ span: String, files: [String], known: Set<String>) -> String? {
        if span.hasSuffix(".swift") {
            // `Server/Connection.swift`, `Connection.swift`, or `+Status.swift` beside the file named before it.
            let found =
                files.contains { $0 == span || $0.hasSuffix("/" + span) || (span.hasPrefix("+") && $0.hasSuffix(span)) }
                || FileManager.default.fileExists(atPath: Repository.root + "/" + span)
            return found ? nil : "file \(span)"
        }
        // `Dispatcher`, `Dispatcher.admit`, `AccountStore.hold(_:)`, `Reloadable<AccountStore>`.
        guard let match = span.wholeMatch(of: #/([A-Z][A-Za-z0-9]*)(?:[.<(].*)?/#) else { return nil }
        return known.contains(String(match.1)) ? nil : "type \(span)"
    }
}
