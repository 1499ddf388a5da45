import AccountdTestSupport
import Foundation
import Testing

/// docs/ARCHITECTURE.md names only what exists: every backticked Swift file name is a file
/// under `Sources/` or `Tests/`, and every backticked type name is declared under
/// `Sources/` (or is a target, a wire name, or one of the few library types it names).
@Suite struct ArchitectureDocTests {
    /// Types from the libraries the daemon uses that the document names.
    static let libraryTypes: Set<String> = [
        "MultiThreadedEventLoopGroup", "NIOThreadPool", "EmbeddedChannel",  // swift-nio
        "ServiceGroup",  // swift-service-lifecycle
        "MetricsSystem",  // swift-metrics
        "Mutex", "Atomic",  // Synchronization
        "Thread",  // Foundation: named as what the daemon does not use
    ]

    /// Every file under `folder` of the repository, as a path from the repository's root.
    static func files(under folder: String) -> [String] {
        let base = Repository.root + "/" + folder
        let found = FileManager.default.enumerator(atPath: base)?.compactMap { $0 as? String } ?? []
        return found.map { folder + "/" + $0 }
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

    @Test func everyFileAndTypeItNamesExists() throws {
        let text = try String(contentsOfFile: Repository.root + "/docs/ARCHITECTURE.md", encoding: .utf8)
        let sources = Self.files(under: "Sources")
        let files = sources + Self.files(under: "Tests")
        let known = try Self.knownNames(sources: sources)
        let spans = Self.backticked(text)
        #expect(spans.count > 50, "the document's names were not found: \(spans.count)")
        let missing = spans.compactMap { Self.missing($0, files: files, known: known) }
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md names what does not exist: \(missing.joined(separator: ", "))")
    }

    /// The check itself: a name that does not exist is caught, in each form the document uses.
    @Test(arguments: ["Server/Nowhere.swift", "Nowhere.swift", "+Nowhere.swift", "NoSuchType", "NoSuchType.member", "NoSuchType<Int>"])
    func aNameThatDoesNotExistIsCaught(_ span: String) throws {
        let sources = Self.files(under: "Sources")
        let known = try Self.knownNames(sources: sources)
        #expect(Self.missing(span, files: sources, known: known) != nil)
        #expect(Self.missing("Server/Connection.swift", files: sources, known: known) == nil)
        #expect(Self.missing("Dispatcher.admit", files: sources, known: known) == nil)
    }
}
