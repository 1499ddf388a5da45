import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// A migration killed with SIGKILL at any moment leaves the file at its old version
/// or its new one, with every row, and a clean integrity check: a chain's hand-written
/// table rebuild, and the rebuild a declarative bundle plans for the same change.
@Suite struct CrashSafetyTests {
    /// The two kinds of bundle, each with the rows its account holds and the fractions of an
    /// uninterrupted migration at which the kills land.
    enum Kind: String, CaseIterable, Sendable {
        case chain, declarative

        var rowCount: Int { self == .chain ? 200_000 : 300_000 }
        var fractions: [Double] {
            self == .chain ? [0.02, 0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.95, 1.1] : [0.05, 0.3, 0.55, 0.8, 0.95, 1.1]
        }

        /// The bundles at versions 1 and 2, written under `dir`.
        func bundles(_ dir: borrowing TestDirectory) throws -> (old: String, new: String) {
            switch self {
            case .chain:
                return (
                    try BundleFixture.write(at: dir.sub("b1"), steps: [CrashSafetyTests.v1]),
                    try BundleFixture.write(at: dir.sub("b2"), steps: [CrashSafetyTests.v1, CrashSafetyTests.v2])
                )
            case .declarative:
                return (
                    try BundleFixture.writeDeclarative(at: dir.sub("b1"), version: 1, schema: CrashSafetyTests.v1),
                    try BundleFixture.writeDeclarative(at: dir.sub("b2"), version: 2, schema: CrashSafetyTests.declarativeV2)
                )
            }
        }
    }

    static let v1 = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER);\nCREATE INDEX item_name ON item(name);"
    /// A table rebuild, the kind of migration that rewrites every row.
    static let v2 = """
        CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0 CHECK (qty >= 0), label TEXT);
        INSERT INTO item_new (id, name, qty, label) SELECT id, name, coalesce(qty, 0), upper(name) FROM item;
        DROP TABLE item;
        ALTER TABLE item_new RENAME TO item;
        CREATE INDEX item_name ON item(name);
        CREATE INDEX item_label ON item(label);
        """
    /// The schema `v2` leaves, from which a declarative bundle plans the same rebuild.
    static let declarativeV2 = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0 CHECK (qty >= 0), label TEXT);
        CREATE INDEX item_name ON item(name);
        CREATE INDEX item_label ON item(label);
        """

    @Test(arguments: Kind.allCases)
    func sigkillDuringMigrationLosesNothing(_ kind: Kind) throws {
        let dir = TestDirectory()
        let alice = try AccountName("alice")
        let (old, new) = try kind.bundles(dir)
        let rowCount = kind.rowCount
        // One prepared account at version 1, copied afresh for every run.
        let template = dir.sub("template")
        let store = AccountStore(root: try DataRoot(template), bundle: try SchemaBundle.load(from: old))
        _ = try store.open(alice)
        try DatabaseQueue(path: store.root.accountPath(alice)).write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO item (name, qty) VALUES (?, ?)")
            for i in 0..<rowCount { try insert.execute(arguments: ["item \(i)", i % 7 == 0 ? nil : i % 1000]) }
        }
        try DatabaseQueue(path: store.root.accountPath(alice)).writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }

        func freshRoot(_ name: String) throws -> String {
            let root = dir.sub(name)
            try FileManager.default.copyItem(atPath: template, toPath: root)
            return root
        }
        func migrate(_ root: String) throws -> Process {
            try Binaries.start(Binaries.accountd, ["migrate", "--data-root", root, "--schema", new, "alice"], logDirectory: dir.path)
        }

        // An uninterrupted run tells how long a migration takes here.
        let baselineRoot = try freshRoot("baseline")
        let started = Date()
        let baseline = try migrate(baselineRoot)
        baseline.waitUntilExit()
        let duration = Date().timeIntervalSince(started)
        #expect(baseline.terminationStatus == 0)
        try check(baselineRoot + "/accounts/alice.sqlite", expecting: [2], rows: rowCount)

        var seen: Set<Int> = []
        for (index, fraction) in kind.fractions.enumerated() {
            let root = try freshRoot("run\(index)")
            let process = try migrate(root)
            Thread.sleep(forTimeInterval: duration * fraction)  // the kill lands at this fraction of a migration: the delay is the point
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            seen.insert(try check(root + "/accounts/alice.sqlite", expecting: [1, 2], rows: rowCount))
            // And the account still migrates afterwards.
            let after = AccountStore(root: try DataRoot(root), bundle: try SchemaBundle.load(from: new))
            #expect(try after.open(alice).version == 2)
            _ = try check(root + "/accounts/alice.sqlite", expecting: [2], rows: rowCount)
        }
        // The kills landed both before and after the commit at least once.
        #expect(seen.contains(1), "no kill landed before the commit (baseline \(duration)s)")
    }

    /// Opens the file as SQLite would after a crash (recovering its WAL) and checks it.
    @discardableResult
    func check(_ path: String, expecting versions: Set<Int>, rows rowCount: Int) throws -> Int {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version")!
            #expect(versions.contains(version))
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM item") == rowCount)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE name = 'item ' || (id - 1)") == rowCount)
            let columns = try db.columns(in: "item").map(\.name)
            #expect(columns == (version == 1 ? ["id", "name", "qty"] : ["id", "name", "qty", "label"]))
            let applied = try Int.fetchOne(db, sql: "SELECT count(*) FROM accountd_migrations")
            #expect(applied == version)
            return version
        }
    }
}
