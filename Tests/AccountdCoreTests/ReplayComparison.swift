import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// The check that ``CorpusTests`` and ``GeneratedHistoryTests`` run on every history
/// and start version: accountd's migrator against the `sqlite3` shell.
///
/// An account is created at version k by accountd, from the bundle truncated at k, and
/// filled with linked rows (``RowFiller``). A copy of the file is brought to the newest
/// version by the shell replaying the remaining migration files with foreign keys off,
/// and the account itself by ``AccountStore``. Both must end with the same normalised
/// schema, which is also a fresh account's, and the same rows in every table.
///
/// The same account at k is then brought to the final schema declaratively, and compared
/// with the chain's result (see ``DeclarativeComparison``).
enum ReplayComparison {
    /// Runs the check for the bundle at `source` from version `k`, in `dir`.
    ///
    /// - Parameters:
    ///   - ignoring: `table.column` values left out of the row comparison (clocks, random blobs).
    ///   - shadowTables: whether the rows of virtual tables' shadow tables are compared too.
    static func check(
        _ source: String, from k: Int, seed: UInt64, ignoring: Set<String> = [], shadowTables: Bool = false,
        in dir: borrowing TestDirectory
    ) throws {
        let alice = try AccountName("alice")
        let full = try SchemaBundle.load(from: source)
        let n = full.targetVersion

        // An account at version k, built by accountd from the bundle truncated at k, filled with rows.
        let truncated = try SchemaBundle.load(from: try BundleFixture.truncate(source, at: k, into: dir.sub("bundle-k")))
        let root = try DataRoot(dir.sub("root"))
        #expect(try AccountStore(root: root, bundle: truncated).open(alice).action == .created)
        let path = root.accountPath(alice)
        var fill = Configuration()
        fill.foreignKeysEnabled = false
        fill.acceptsDoubleQuotedStringLiterals = true
        let filler = try DatabaseQueue(path: path, configuration: fill)
        let inserted = try filler.write { db in try RowFiller.fill(db, rowsPerTable: 5, seed: seed) }
        try filler.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        try filler.close()
        #expect(inserted.values.reduce(0, +) > 0)

        // The shell's reference: steps k+1..N replayed on a copy, foreign keys off.
        let reference = dir.sub("reference.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: reference)
        // A second copy, in a data root of its own, for the declarative bundle.
        let declarativeRoot = try DataRoot(dir.sub("declarative-root"))
        try FileManager.default.copyItem(atPath: path, toPath: declarativeRoot.accountPath(alice))
        let remaining = try (k + 1...n).map { version in
            try String(contentsOfFile: full.directory + "/" + full.migrations[version - 1].relativePath, encoding: .utf8)
        }
        try Files.sqlite3(reference, ".bail on\nPRAGMA foreign_keys = OFF;\nBEGIN;\n" + remaining.joined(separator: "\n;\n") + "\n;\nCOMMIT;\n")

        // accountd migrates the account itself.
        let outcome = try AccountStore(root: root, bundle: full).open(alice)
        #expect(outcome.action == .migrated)
        #expect(outcome.fromVersion == k)
        #expect(outcome.version == n)

        // Same schema as the shell's copy, and as a fresh account.
        let freshRoot = try DataRoot(dir.sub("fresh"))
        _ = try AccountStore(root: freshRoot, bundle: full).open(alice)
        let migrated = try DatabaseQueue(path: path).read { try SchemaReader.read($0) }
        let replayed = try DatabaseQueue(path: reference).read { try SchemaReader.read($0) }
        let fresh = try DatabaseQueue(path: freshRoot.accountPath(alice)).read { try SchemaReader.read($0) }
        #expect(migrated == replayed, "\(SchemaDiff(leftName: "migrated", rightName: "shell").differences(migrated, replayed))")
        #expect(migrated == fresh, "\(SchemaDiff(leftName: "migrated", rightName: "fresh").differences(migrated, fresh))")

        // Same rows as the shell's replay.
        let ours = try TableDump.dumpFile(path: path, ignoring: ignoring, shadowTables: shadowTables)
        let theirs = try TableDump.dumpFile(path: reference, ignoring: ignoring, shadowTables: shadowTables)
        #expect(ours.keys.sorted() == theirs.keys.sorted())
        for table in theirs.keys.sorted() where ours[table] != theirs[table] {
            let mine = ours[table] ?? [], shells = theirs[table] ?? []
            let onlyMine = mine.filter { !Set(shells).contains($0) }, onlyShells = shells.filter { !Set(mine).contains($0) }
            Issue.record("table \(table) differs: accountd \(mine.count) rows, shell \(shells.count) rows; first row only accountd has: \(onlyMine.first ?? "-"); first row only the shell has: \(onlyShells.first ?? "-")")
        }
        #expect(ours.values.reduce(0) { $0 + $1.count } > 0)

        try DeclarativeComparison.check(
            root: declarativeRoot, chainResult: path, finalSchemaFrom: freshRoot.accountPath(alice), version: n, in: dir)
    }
}
