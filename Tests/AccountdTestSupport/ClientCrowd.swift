import Foundation

/// Many clients at once: `count` threads, each with its own connection to the daemon's
/// socket, each running `body` with its index and its client until `body` returns (a
/// client that cannot connect runs nothing). ``wait(timeout:)`` waits for all of them.
///
/// For the tests that load one account from many connections (group commits, kill -9 under
/// writers); each thread blocks on its own socket, which is what a crowd of clients does.
public final class ClientCrowd: Sendable {
    private let group = DispatchGroup()

    /// Starts the `count` clients on `socket`.
    public init(_ count: Int, socket: String, _ body: @escaping @Sendable (_ worker: Int, _ client: RawClient) -> Void) {
        for worker in 0..<count {
            group.enter()
            Thread { [group] in
                defer { group.leave() }
                guard let client = try? RawClient(socket: socket) else { return }
                body(worker, client)
            }.start()
        }
    }

    /// Waits up to `seconds` for every client's `body` to return; false when one did not.
    public func wait(timeout seconds: TimeInterval) -> Bool {
        group.wait(timeout: .now() + seconds) == .success
    }
}
