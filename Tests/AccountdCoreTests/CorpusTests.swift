import AccountdProtocol
import Foundation
import GRDB
import AccountdTestSupport
import Testing

@testable import AccountdCore

/// Real migration histories (`$ACCOUNTD_CORPUS`, else ../shared/corpus): an account
/// created at every older version k and filled with linked rows migrates to the newest
/// version with the same schema as a fresh account, and with the rows that the `sqlite3`
/// shell produces when it replays the remaining steps on a copy.
///
/// Skipped, with the reason printed, when the histories are absent (a plain clone);
/// `.ci/run` sets `ACCOUNTD_CORPUS`, and a variable naming a missing folder fails
/// ``corpusNamedByTheEnvironmentExists``.
@Suite(.enabled(if: Repository.corpusIsPresent, Comment(rawValue: Repository.corpusSkipReason)))
struct CorpusTests {
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
        try ReplayComparison.check(
            Repository.corpus + "/" + test.history, from: test.k, seed: 0xACC0_0000 &+ UInt64(test.k),
            ignoring: Self.ignored(test.history, k: test.k), in: dir)
    }
}

/// A corpus named by `ACCOUNTD_CORPUS` must be there: CI sets the variable so that the
/// real histories run, and a wrong path must fail rather than skip them quietly.
@Suite struct CorpusLocationTests {
    @Test(.enabled(if: Repository.corpusIsRequired, "ACCOUNTD_CORPUS is not set: the corpus is optional"))
    func corpusNamedByTheEnvironmentExists() {
        #expect(Repository.corpusIsPresent, "ACCOUNTD_CORPUS=\(Repository.corpus) is not a folder")
    }
}
