import AccountdTestSupport
import Foundation
import Testing

/// The daemon's concurrency model, held by its sources: no thread of its own, no Dispatch
/// queue or semaphore, no blocking wait on a future (docs/ARCHITECTURE.md, "Threading").
@Suite struct ConcurrencyRulesTests {
    /// What the libraries and the daemon never use.
    static let forbidden = ["Thread(", "Thread {", "DispatchQueue", "DispatchSemaphore", ".wait()"]

    /// Files allowed one of them for now, each with the reason; empty once every part follows the model.
    static let exceptions: [String: String] = [:]

    @Test func coreAndDaemonHaveNoThreadQueueSemaphoreOrBlockingWait() throws {
        var found: [String] = []
        for target in ["AccountdCore", "AccountdDaemon"] {
            let folder = Repository.root + "/Sources/" + target
            for file in FileManager.default.enumerator(atPath: folder)?.compactMap({ $0 as? String }) ?? [] where file.hasSuffix(".swift") {
                let path = "Sources/\(target)/\(file)"
                let text = try String(contentsOfFile: Repository.root + "/" + path, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    guard !code.hasPrefix("//") else { continue }
                    for pattern in Self.forbidden where code.contains(pattern) && Self.exceptions[path] != pattern {
                        found.append("\(path):\(number + 1): \(pattern)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
