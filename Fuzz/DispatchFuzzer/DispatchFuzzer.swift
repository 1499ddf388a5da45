// libFuzzer target over the request dispatcher: each input is a few request lines, answered
// by the daemon's real Dispatcher and services on a temporary data root with the
// sample bundle, and every reply is checked (see ReplyInvariants).
//
// Built by `make fuzz`, through SwiftPM with `-sanitize=fuzzer,address` (the target exists
// only when ACCOUNTD_FUZZ is set; see Package.swift). Run it from the repository root, or
// with ACCOUNTD_FUZZ_SCHEMA naming the bundle, and with SWIFT_BACKTRACE=enable=no so that
// libFuzzer, not Swift's backtracer, handles a crash and saves the input. A failure prints
// the request, its replies and the daemon's last log lines; the inputs since the data root
// was last rebuilt are in the `history/` folder named at start-up, and
// `DispatchFuzzer <that folder>/*` replays them in order.

@testable import AccountdDaemon
import AccountdProtocol
import Foundation

/// The longest request line, as `requests.maxBytes` (small, like `-max_len`).
let maximumLineLength = 4096
/// The most requests one input may make, so that each input stays quick.
let maximumRequests = 16

/// The harness, built at the first input. libFuzzer calls `LLVMFuzzerTestOneInput` from one
/// thread, one input at a time, so nothing else ever touches it.
nonisolated(unsafe) let harness: Harness = {
    do {
        let harness = try Harness()
        atexit { finishRun() }
        return harness
    } catch {
        fatalError("DispatchFuzzer cannot start: \(error)")
    }
}()

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The program's `main`. SwiftPM links an executable target with `main` defined as
/// `<target>_main`, so libFuzzer's own `main` is not used: this one hands over to its driver.
@_cdecl("DispatchFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return runFuzzerDriver(&argc, &argv, fuzz)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    harness.begin(input)

    // The lines, as a connection frames them; a last line without its newline counts, as
    // it does when the client closes its side.
    var framer = LineFramer(maximumLineLength: maximumLineLength)
    framer.append(input)
    var lines: [[UInt8]] = []
    var framed = true
    while true {
        do {
            guard let line = try framer.nextLine() else { break }
            lines.append(Array(line))
        } catch {
            framed = false  // the connection answers RequestTooLarge and closes
            break
        }
    }
    if framed, !framer.remainder.isEmpty { lines.append(framer.remainder) }

    var made = 0
    for line in lines where made < maximumRequests {
        answer(line, made: &made)
    }
    return 0
}

/// Answers one line as `Connection` does: through the responder, which runs it at once, in a group commit or in a task.
func answer(_ line: [UInt8], made: inout Int) {
    let request: Request
    let invariants = ReplyInvariants(line: line, clientText: { [] }, context: failureContext)
    do {
        guard let decoded = try Request.decode(line) else { return }
        request = decoded
    } catch {
        made += 1
        harness.statistics.decodeErrors += 1
        invariants.checkUndecodable(error.reply)
        return
    }
    // Watch belongs to the connection, not the dispatcher.
    guard request.method != .watch else { return }
    made += 1
    harness.statistics.requests += 1

    let checked = ReplyInvariants(
        line: line,
        clientText: {
            var texts: [String] = []
            ReplyInvariants.strings(in: .object(request.parameters.pairs), into: &texts)
            return texts + harness.daemon.root.accountNames().map(\.rawValue)
        },
        context: failureContext)
    let dispatcher = harness.daemon.dispatcher
    let started = ContinuousClock.now
    defer { harness.statistics.record(request.method, ContinuousClock.now - started) }
    let replies: [Reply]
    switch dispatcher.decode(line, peer: harness.peer, framing: .line) {
    case .blank:
        fatalError("a line that decodes to a request was taken as blank: \(failureContext())")
    case .refused, .service:
        harness.statistics.immediate += 1
        replies = checked.check(harness.respond(line).1, for: request)
    case .call(let call):
        let isChange = request.method == .set || request.method == .delete
        if isChange && harness.statistics.requests % 2 == 1 {
            // Every other Set or Delete runs in a task even when its table is open.
            replies = checked.check(harness.runInTask(call) { dispatcher, _ in try await dispatcher.change(call.command) }, for: request)
        } else {
            let (response, bytes) = harness.respond(line)
            if response == .answered { harness.statistics.immediate += 1 } else if isChange { harness.statistics.withoutTask += 1 }
            replies = checked.check(bytes, for: request)
            // A Get or Keys answered at once and the same read in a task must agree.
            if response == .answered, request.method == .get || request.method == .keys {
                checked.checkAgreement(atOnce: bytes, task: harness.runInTask(call) { dispatcher, replies in try await dispatcher.read(call.command, uid: call.peer.uid, writer: replies) }, for: request)
            }
        }
    }
    for reply in replies {
        harness.statistics.replies[reply.error?.shortName ?? "ok", default: 0] += 1
    }
}

/// At a normal exit (libFuzzer's time or run limit): the summary, and the folder removed.
/// A crash leaves the folder for its history.
func finishRun() {
    FileHandle.standardError.write(Data((harness.statistics.summary + "\n").utf8))
    harness.removeEverything()
}

/// What a failure report adds to the request and its replies.
func failureContext() -> String {
    "== the daemon's last log lines:\n\(CapturingLogHandler.report)\n== the inputs since the last rebuild: \(harness.historyDirectory) (replay: DispatchFuzzer \(harness.historyDirectory)/*)"
}
