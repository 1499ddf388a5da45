@testable import AccountdDaemon
import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// What stays from one input to the next: the temporary folder, the bundles, the daemon
/// (rebuilt on a fresh data root when it holds too many accounts), the peer, and the
/// inputs since the last rebuild.
///
/// State accumulates across inputs on purpose (an account switched to in one input is
/// exported in the next), so a failure may depend on earlier inputs. Each input is kept in
/// `history/` before it runs; `DispatchFuzzer <tmp>/history/*` replays them in order in one
/// process, on a fresh data root, which reproduces such a failure.
final class Harness {
    /// A rebuild happens before an input when the data root has more accounts than this, so
    /// that `List` and `Migrate --all` stay quick...
    static let maximumAccounts = 20
    /// ... or after this many inputs, so that the history (and the preferences) stay small.
    static let maximumInputs = 5000

    let directory: String
    let peer = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
    let logger: Logger
    private let fixtures: Fixtures
    private(set) var daemon: FuzzDaemon
    private var generation = 0
    private var inputsSinceRebuild = 0
    var statistics = Statistics()

    var historyDirectory: String { directory + "/history" }

    /// Loads the bundle (`ACCOUNTD_FUZZ_SCHEMA`, else `config/schema` in the current
    /// directory) and starts the daemon in a new folder under `/tmp`.
    init() throws {
        unsetenv("NOTIFY_SOCKET")
        let schema = ProcessInfo.processInfo.environment["ACCOUNTD_FUZZ_SCHEMA"] ?? "config/schema"
        var template = Array("/tmp/accountd-dispatch-fuzz.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        directory = String(cString: made)
        fixtures = try Fixtures(schema: schema, directory: directory)
        logger = Logger(label: "accountd.fuzz", factory: { _ in CapturingLogHandler() })
        try FileManager.default.createDirectory(atPath: directory + "/history", withIntermediateDirectories: true)
        daemon = try FuzzDaemon(dataRoot: directory + "/data0", fixtures: fixtures, logger: logger)
        FileHandle.standardError.write(
            Data("DispatchFuzzer: bundle \(fixtures.bundle.directory) (version \(fixtures.bundle.targetVersion)); data root and inputs since the last rebuild under \(directory)\n".utf8))
    }

    /// Rebuilds the daemon if its data root is full or old, then keeps `input` in the history.
    func begin(_ input: [UInt8]) {
        if inputsSinceRebuild >= Self.maximumInputs || daemon.root.accountNames().count > Self.maximumAccounts { rebuild() }
        inputsSinceRebuild += 1
        let name = String(inputsSinceRebuild)
        let padded = String(repeating: "0", count: max(0, 6 - name.count)) + name
        _ = FileManager.default.createFile(atPath: historyDirectory + "/" + padded, contents: Data(input))
    }

    /// A fresh daemon on an empty data root; the old one is shut down and removed.
    private func rebuild() {
        daemon.shutDown()
        try? FileManager.default.removeItem(atPath: daemon.root.path)
        try? FileManager.default.removeItem(atPath: historyDirectory)
        try? FileManager.default.createDirectory(atPath: historyDirectory, withIntermediateDirectories: true)
        generation += 1
        inputsSinceRebuild = 0
        statistics.rebuilds += 1
        do {
            daemon = try FuzzDaemon(dataRoot: directory + "/data\(generation)", fixtures: fixtures, logger: logger)
        } catch {
            fatalError("the daemon could not be rebuilt in \(directory): \(error)")
        }
    }

    /// Hands `line` to the responder as a connection does, and returns how it ran and the
    /// bytes written once it has ended.
    func respond(_ line: [UInt8]) -> (Dispatcher.Response, [UInt8]) {
        let (dispatcher, peer) = (daemon.dispatcher, peer)
        return serve { writer in dispatcher.respond(to: line, peer: peer, framing: .line, writer: writer) }
    }

    /// Runs `call` in a task, as the responder runs the calls that wait, whatever way it
    /// would have chosen, and returns the bytes written: `body` is the work of that task.
    func runInTask(_ call: Dispatcher.Call, _ body: @escaping @Sendable (Dispatcher, ReplyWriter) async throws -> Reply?) -> [UInt8] {
        let dispatcher = daemon.dispatcher
        return serve { writer in dispatcher.task(call, writer) { replies in try await body(dispatcher, replies) } }.1
    }

    /// Runs `start` with a connection's writer on an event loop, waits until the request has
    /// ended, and returns what `start` returned and every byte written.
    private func serve(_ start: @escaping @Sendable (ConnectionWriter) -> Dispatcher.Response) -> (Dispatcher.Response, [UInt8]) {
        let output = CapturingTransport()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let ended = DispatchSemaphore(value: 0)
        let response = try! loop.submit { () -> Dispatcher.Response in
            let writer = ConnectionWriter(loop: loop, output: output)
            writer.requestEnded = {
                writer.flush()
                writer.requestEnded = {}
                ended.signal()
            }
            let response = start(writer)
            if response != .running {
                writer.flush()
                writer.requestEnded = {}
                ended.signal()
            }
            return response
        }.wait()
        ended.wait()
        return (response, output.take())
    }

    /// Removes the temporary folder at the end of a run that found nothing.
    func removeEverything() {
        daemon.shutDown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Counts for the summary printed at the end of a run.
struct Statistics {
    var requests = 0
    var immediate = 0
    /// Sets and Deletes handled as a connection does without a task.
    var withoutTask = 0
    var decodeErrors = 0
    var replies: [String: Int] = [:]
    var rebuilds = 0
    /// Per method: how many requests, and the time they took in all.
    var methods: [String: (count: Int, time: Duration)] = [:]

    mutating func record(_ method: Method, _ time: Duration) {
        let old = methods[method.rawValue] ?? (0, .zero)
        methods[method.rawValue] = (old.count + 1, old.time + time)
    }

    /// Three lines: requests, replies by error name, and the time per method.
    var summary: String {
        let names = replies.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let times = methods.sorted { $0.value.time > $1.value.time }.map { name, entry -> String in
            let (seconds, attoseconds) = (entry.time / entry.count).components
            let milliseconds = Double(seconds) * 1e3 + Double(attoseconds) / 1e15
            return "\(name) \(entry.count) (\((milliseconds * 100).rounded() / 100) ms)"
        }.joined(separator: ", ")
        return """
            dispatch: \(requests) requests (\(immediate) answered at once, \(withoutTask) changes without a task), \(decodeErrors) undecodable lines, \(rebuilds) data-root rebuilds
            dispatch replies: \(names)
            dispatch methods (count, mean time): \(times)
            """
    }
}
