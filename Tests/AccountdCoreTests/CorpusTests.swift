import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Real migration histories (../shared/corpus): an account created at every older
/// version k and filled with linked rows migrates to the newest version with the
/// same schema as a fresh account, and with the rows that the `sqlite3` shell
/// produces when it replays the remaining steps on a copy.
@Suite struct CorpusTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var history: String
        var k: Int
        var testDescription: String { "\(history) from version \(k)" }
    }

    static let histories = ["atuin", "mihon", "memos"]

    static func stepCount(_ history: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: Repository.corpus + "/\(history)/migrations")) ?? [])
            .filter { $0.hasSuffix(".sql") }.count
    }

    static let cases: [Case] = histories.flatMap { history in
        let n = stepCount(history)
        return n > 1 ? (1..<n).map { Case(history: history, k: $0) } : []
    }

    /// Columns whose values a step fills from the clock or from randomblob(), named as they are
    /// after the last step (see the corpus README), and the first version at which the
    /// replayed steps no longer write them.
    static func ignored(_ history: String, k: Int) -> Set<String> {
        switch history {
        // 0026 stamps rows with the current time, and its triggers keep doing so on later UPDATEs.
        case "mihon":
            ["mangas.last_modified_at", "mangas.favorite_modified_at", "chapters.last_modified_at", "mangas_categories.last_modified_at"]
        // 0023 writes a random public_id (dropped again by 0026); 0035 a random resource_name,
        // renamed uid by 0038, in a table renamed attachment by 0047.
        case "memos" where k < 35: ["memo.uid", "attachment.uid"]
        default: []
        }
    }

    @Test func everyHistoryIsPresent() {
        #expect(Self.histories.map(Self.stepCount) == [12, 42, 62], "corpus at \(Repository.corpus)")
        #expect(Self.cases.count == 11 + 41 + 61)
    }

    @Test(arguments: cases)
    func migratesFromEveryVersion(_ test: Case) throws {
        let dir = TestDirectory("\(test.history)\(test.k)")
        let alice = try AccountName("alice")
        let source = Repository.corpus + "/" + test.history
        let n = Self.stepCount(test.history)
        let full = try SchemaBundle.load(from: source)

        // An account at version k, built by accountd from the bundle truncated at k, filled with rows.
        let truncated = try SchemaBundle.load(from: try BundleFixture.truncate(source, at: test.k, into: dir.sub("bundle-k")))
        let root = try DataRoot(dir.sub("root"))
        #expect(try AccountStore(root: root, bundle: truncated).open(alice).action == .created)
        let path = root.accountPath(alice)
        var fill = Configuration()
        fill.foreignKeysEnabled = false
        fill.acceptsDoubleQuotedStringLiterals = true
        let filler = try DatabaseQueue(path: path, configuration: fill)
        let inserted = try filler.write { db in try RowFiller.fill(db, rowsPerTable: 5, seed: 0xACC0_0000 &+ UInt64(test.k)) }
        try filler.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        try filler.close()
        #expect(inserted.values.reduce(0, +) > 0)

        // The shell's reference: steps k+1..N replayed on a copy, foreign keys off.
        let reference = dir.sub("reference.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: reference)
        let remaining = try (test.k + 1...n).map { version in
            try String(contentsOfFile: full.directory + "/" + full.migrations[version - 1].relativePath, encoding: .utf8)
        }
        try Files.sqlite3(reference, ".bail on\nPRAGMA foreign_keys = OFF;\nBEGIN;\n" + remaining.joined(separator: "\n;\n") + "\n;\nCOMMIT;\n")

        // accountd migrates the account itself.
        let outcome = try AccountStore(root: root, bundle: full).open(alice)
        #expect(outcome.action == .migrated)
        #expect(outcome.fromVersion == test.k)
        #expect(outcome.version == n)

        // Same schema as a fresh account.
        let freshRoot = try DataRoot(dir.sub("fresh"))
        _ = try AccountStore(root: freshRoot, bundle: full).open(alice)
        let migrated = try DatabaseQueue(path: path).read { try SchemaReader.read($0) }
        let fresh = try DatabaseQueue(path: freshRoot.accountPath(alice)).read { try SchemaReader.read($0) }
        #expect(migrated == fresh, "\(SchemaDiff(leftName: "migrated", rightName: "fresh").differences(migrated, fresh))")

        // Same rows as the shell's replay.
        let ignoring = Self.ignored(test.history, k: test.k)
        let ours = try TableDump.dumpFile(path: path, ignoring: ignoring)
        let theirs = try TableDump.dumpFile(path: reference, ignoring: ignoring)
        #expect(ours.keys.sorted() == theirs.keys.sorted())
        for table in theirs.keys.sorted() where ours[table] != theirs[table] {
            Issue.record("table \(table) differs: accountd \(ours[table]?.count ?? 0) rows, shell \(theirs[table]?.count ?? 0) rows; first accountd row: \(ours[table]?.first ?? "-"); first shell row: \(theirs[table]?.first ?? "-")")
        }
        #expect(ours.values.reduce(0) { $0 + $1.count } > 0)
    }
}
