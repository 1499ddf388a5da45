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

    /// Where an unstructured task may start: a request's own task (`Dispatcher.task`) and a
    /// Watch's, each tied to its connection. Everything else that runs beside a request is a
    /// child task of a group (an Execute batch runs in its leader's request task, the start-up
    /// opener's accounts in the `StartupOpener` service's group).
    static let unstructuredTasks: Set<String> = [
        "Sources/AccountdDaemon/Dispatch/Dispatcher.swift", "Sources/AccountdDaemon/Server/Connection.swift",
    ]

    @Test func unstructuredTasksStartOnlyForARequestOrAWatch() throws {
        var found: [String] = []
        for target in ["AccountdCore", "AccountdDaemon"] {
            let folder = Repository.root + "/Sources/" + target
            for file in FileManager.default.enumerator(atPath: folder)?.compactMap({ $0 as? String }) ?? [] where file.hasSuffix(".swift") {
                let path = "Sources/\(target)/\(file)"
                guard !Self.unstructuredTasks.contains(path) else { continue }
                let text = try String(contentsOfFile: Repository.root + "/" + path, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    guard !code.hasPrefix("//") else { continue }
                    // `Task {`, `Task(...)`, `Task.detached`; not `addTask`, `scheduleTask(` and the like.
                    if code.contains(try Regex(#"(^|[^A-Za-z_.])Task(\.detached|\s*\{|\()"#)) {
                        found.append("\(path):\(number + 1): \(code)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
