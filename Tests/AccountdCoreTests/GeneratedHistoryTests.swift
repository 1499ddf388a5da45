import Foundation
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Seeded schema histories (``HistoryGenerator``), so that a plain clone exercises the
/// migrator on more than the sample bundle: for every seed and every start version k, an
/// account created at k and filled with rows migrates to the newest version with the
/// schema and rows (virtual tables' shadow tables included) that the `sqlite3` shell gets
/// by replaying the same files on a copy.
///
/// `make test` runs seeds 1 to 4; `ACCOUNTD_HISTORY_SEEDS=N` runs seeds 1 to N.
@Suite struct GeneratedHistoryTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var seed: UInt64
        var k: Int
        var testDescription: String { "seed \(seed) from version \(k)" }
    }

    /// Migrations per history.
    static let steps = 12

    static let seeds: [UInt64] = {
        let count = ProcessInfo.processInfo.environment["ACCOUNTD_HISTORY_SEEDS"].flatMap { Int($0) } ?? 4
        return (1...UInt64(max(count, 1))).map { $0 }
    }()

    static let cases: [Case] = seeds.flatMap { seed in (1..<steps).map { Case(seed: seed, k: $0) } }

    static func writeBundle(seed: UInt64, in dir: borrowing TestDirectory) throws -> String {
        try HistoryGenerator.write(HistoryGenerator.history(seed: seed, steps: steps), at: dir.sub("bundle"))
    }

    /// Every history is valid SQL for the shell on its own, on an empty file: the generator's
    /// promise, checked without accountd.
    @Test(arguments: seeds)
    func everyStepAppliesInTheShell(_ seed: UInt64) throws {
        let dir = TestDirectory("shell\(seed)")
        let history = HistoryGenerator.history(seed: seed, steps: Self.steps)
        for (index, step) in history.enumerated() {
            do {
                try Files.sqlite3(dir.sub("empty.sqlite"), ".bail on\nBEGIN;\n\(step.sql)\n;\nCOMMIT;\n")
            } catch {
                Issue.record("seed \(seed) step \(index + 1) (\(step.name)) does not apply: \(error)\n\(step.sql)")
                return
            }
        }
    }

    /// The same seed gives the same files, so a failure names a history anyone can replay.
    @Test func historiesAreReproducible() {
        let first = HistoryGenerator.history(seed: 7, steps: Self.steps).map(\.sql)
        #expect(first == HistoryGenerator.history(seed: 7, steps: Self.steps).map(\.sql))
        #expect(first != HistoryGenerator.history(seed: 8, steps: Self.steps).map(\.sql))
    }

    /// The default seeds between them use every kind of operation the generator has, so
    /// `make test` covers rebuilds, renames, drops, triggers and every virtual table kind.
    @Test func defaultSeedsCoverEveryOperation() {
        let used = Set((1...4).flatMap { HistoryGenerator.history(seed: UInt64($0), steps: Self.steps).flatMap(\.operations) })
        let missing = HistoryGenerator.Operation.allCases.filter { !used.contains($0) }
        #expect(missing.isEmpty, "operations no default seed uses: \(missing.map(\.rawValue))")
    }

    @Test(arguments: cases)
    func migratesLikeTheShell(_ test: Case) throws {
        let dir = TestDirectory("history\(test.seed)k\(test.k)")
        let bundle = try Self.writeBundle(seed: test.seed, in: dir)
        try ReplayComparison.check(bundle, from: test.k, seed: 0xF111_0000 &+ test.seed &* 100 &+ UInt64(test.k), shadowTables: true, in: dir)
    }
}
