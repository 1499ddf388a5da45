import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Litestream's list of databases for `Replication`, which anyone may call: looked up at
/// most once at a time, shared by every caller, kept for a moment, and bounded in time.
///
/// However many clients ask, and however Litestream behaves, there is at most one exchange
/// with its control socket in flight (one socket, no thread: ``LitestreamExchange``), each
/// ends within ``timeout``, and an answer (or a failure) is reused for ``freshFor``. A hung
/// Litestream costs each caller at most ``timeout`` and the daemon one socket.
final class LitestreamStatusCache: Sendable {
    /// The outcome of one look-up.
    struct Lookup: Sendable {
        /// The control socket asked.
        var socketPath: String
        /// What Litestream listed, or why it could not be asked.
        var result: Result<[LitestreamControl.Database], LitestreamControl.Failure>
        /// When the look-up ended.
        var at: NIODeadline
    }

    /// How long one look-up may take.
    let timeout: TimeAmount
    /// How long a look-up's outcome is reused.
    let freshFor: TimeAmount

    private struct State {
        var last: Lookup?
        var inFlight: (socketPath: String, future: EventLoopFuture<Lookup>)?
    }

    private let state = Mutex(State())

    init(timeout: TimeAmount = .milliseconds(1500), freshFor: TimeAmount = .seconds(1)) {
        self.timeout = timeout
        self.freshFor = freshFor
    }

    /// What Litestream's control socket at `socketPath` lists: a fresh outcome if there is
    /// one, else the look-up in flight, else a new one.
    ///
    /// - Parameter failed: called when a look-up this call started fails, once per look-up
    ///   however many callers share it (for one log line, not one per caller).
    func lookup(socketPath: String, failed: (LitestreamControl.Failure) -> Void = { _ in }) async -> Lookup {
        enum Step {
            case done(Lookup)
            case join(EventLoopFuture<Lookup>)
            case start(EventLoopPromise<Lookup>)
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let step: Step = state.withLock { state in
            if let last = state.last, last.socketPath == socketPath, NIODeadline.now() - last.at < freshFor { return .done(last) }
            if let inFlight = state.inFlight, inFlight.socketPath == socketPath { return .join(inFlight.future) }
            let promise = loop.makePromise(of: Lookup.self)
            state.inFlight = (socketPath, promise.futureResult)
            return .start(promise)
        }
        switch step {
        case .done(let lookup):
            return lookup
        case .join(let future):
            // The future never fails: a failure is an outcome (see below).
            return (try? await future.get()) ?? Lookup(socketPath: socketPath, result: .failure(.init(description: "the look-up was cancelled")), at: .now())
        case .start(let promise):
            let result: Result<[LitestreamControl.Database], LitestreamControl.Failure>
            do {
                result = .success(try await LitestreamControl(socketPath: socketPath).databases(within: timeout))
            } catch let failure as LitestreamControl.Failure {
                result = .failure(failure)
            } catch {
                result = .failure(.init(description: "asking Litestream's control socket \(socketPath) failed: \(error)"))
            }
            let lookup = Lookup(socketPath: socketPath, result: result, at: .now())
            state.withLock { state in
                state.last = lookup
                if state.inFlight?.future == promise.futureResult { state.inFlight = nil }
            }
            promise.succeed(lookup)
            if case .failure(let failure) = result { failed(failure) }
            return lookup
        }
    }
}
