import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// The declarative half of ``ReplayComparison``: the same filled account at version k,
/// brought to the history's final schema by a declarative bundle whose `schema.sql` is
/// that schema written out, against the chain's result.
///
/// Without directives, a plan that would lose data (a table or column the chain dropped
/// or renamed, which a declarative bundle cannot tell apart) must be refused, naming the
/// loss, with the file byte-for-byte unchanged. The same schema with every such drop
/// allowed must then migrate to exactly the chain's schema, and every column that the
/// version-k file and the final schema share holds the values the chain gives, unless the
/// chain's own steps rewrote that column.
enum DeclarativeComparison {
    /// What a run did, for the callers' tallies.
    enum Outcome { case migrated, migratedWithAllowedDrops, refusedConstraints }

    /// Runs the check on `file` (a copy of the account at version k, in its own data root
    /// `root`), against `chainResult`, the same account migrated by the chain to version `n`.
    @discardableResult
    static func check(
        root: DataRoot, chainResult: String, finalSchemaFrom fresh: String, version n: Int, in dir: borrowing TestDirectory
    ) throws -> Outcome {
        let alice = try AccountName("alice")
        let file = root.accountPath(alice)
        let schemaText = try readQueue(fresh) { db in try objectSQL(db).joined(separator: ";\n") + ";\n" }
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        let (kShape, originals, kVirtual) = try readQueue(file) { db in
            (try shape(db), try columnValues(db), Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_list WHERE type = 'virtual'")))
        }
        let finalShape = try readQueue(fresh) { try shape($0) }

        let strict = try SchemaBundle.load(
            from: try BundleFixture.writeDeclarative(at: dir.sub("declarative-strict"), version: n, schema: schemaText))
        var outcome = Outcome.migrated
        do {
            _ = try AccountStore(root: root, bundle: strict).open(alice)
        } catch let error as AccountdError where error.kind == .migrationFailed {
            // A refusal lists each loss in its details, and its message names them all.
            #expect(!error.details.isEmpty && error.details.allSatisfy { error.message.contains($0) }, "\(error)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "a refused plan leaves the file unchanged")

            var allowances: [String] = []
            for (table, columns) in kShape.sorted(by: { $0.key < $1.key }) {
                // A virtual table whose definition changed is made anew: a drop, as far as its rows go.
                guard let kept = finalShape[table], !kVirtual.contains(table) else {
                    allowances.append("-- accountd: allow-drop \(table)")
                    continue
                }
                allowances += columns.filter { !kept.contains($0) }.map { "-- accountd: allow-drop \(table).\($0)" }
            }
            let permissive = try SchemaBundle.load(
                from: try BundleFixture.writeDeclarative(
                    at: dir.sub("declarative-permissive"), version: n, schema: allowances.joined(separator: "\n") + "\n" + schemaText))
            do {
                _ = try AccountStore(root: root, bundle: permissive).open(alice)
                outcome = .migratedWithAllowedDrops
            } catch let error as AccountdError where error.kind == .migrationFailed {
                // Only rows that break a new constraint may still stop it: those are never allowed.
                #expect(!error.details.isEmpty && error.details.allSatisfy { !$0.contains("drop") }, "\(error)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
                return .refusedConstraints
            }
        }

        let (declarative, chain) = (try readQueue(file) { try SchemaReader.read($0) }, try readQueue(chainResult) { try SchemaReader.read($0) })
        #expect(declarative == chain, "\(SchemaDiff(leftName: "declarative", rightName: "chain").differences(declarative, chain))")
        let declarativeValues = try readQueue(file) { try columnValues($0) }
        let chainValues = try readQueue(chainResult) { try columnValues($0) }
        for (column, original) in originals.sorted(by: { $0.key < $1.key }) {
            guard let chained = chainValues[column], chained == original else { continue }  // gone, or rewritten by the chain
            #expect(declarativeValues[column] == chained, "column \(column): the declarative values differ from the chain's")
        }
        return outcome
    }

    /// The `CREATE` statements of a database's own objects: tables, then indexes, views, triggers.
    static func objectSQL(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT sql FROM sqlite_master
                WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'accountd\\_%' ESCAPE '\\'
                  AND name NOT IN (SELECT name FROM pragma_table_list WHERE type = 'shadow')
                ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid
                """)
    }

    /// Tables, virtual ones included, to their columns, lowercased.
    static func shape(_ db: Database) throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for table in try ordinaryTables(db, virtual: true) {
            out[table.lowercased()] = try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [table])
        }
        return out
    }

    /// `table.column` to the sorted values of that column, quoted: compared as multisets, so
    /// that a rebuild's row order does not matter.
    static func columnValues(_ db: Database) throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for table in try ordinaryTables(db) {
            for column in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0", arguments: [table]) {
                out["\(table.lowercased()).\(column.lowercased())"] = try String.fetchAll(
                    db, sql: "SELECT quote(\(DefinitionText.quote(column))) AS v FROM \(DefinitionText.quote(table)) ORDER BY v")
            }
        }
        return out
    }

    private static func ordinaryTables(_ db: Database, virtual: Bool = false) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table'\(virtual ? ", 'virtual'" : ""))
                  AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'accountd\\_%' ESCAPE '\\'
                """)
    }

    private static func readQueue<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var config = Configuration()
        config.readonly = true
        config.acceptsDoubleQuotedStringLiterals = true
        let queue = try DatabaseQueue(path: path, configuration: config)
        defer { try? queue.close() }
        return try queue.read(body)
    }
}
