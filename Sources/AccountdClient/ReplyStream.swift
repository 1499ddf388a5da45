import AccountdProtocol

/// The replies of one streamed request, as typed elements.
///
/// The request is sent when iteration begins, and holds the client's connection until its
/// last reply (see ``AccountdClient`` on sharing). Iterate it once. A request the client
/// refused before sending (an invalid account name) throws at the first element.
public struct ReplyStream<Element: Sendable>: AsyncSequence, Sendable {
    /// Turns the first of `lines` (or several, for an element that gathers replies) into
    /// an element, removing what it used; `last` is true when that was the request's final reply.
    typealias Parse = @Sendable (_ lines: inout ArraySlice<ArraySlice<UInt8>>, _ client: AccountdClient) throws(AccountdClientError) -> (element: Element?, last: Bool)

    let client: AccountdClient
    /// What to send, or why it was refused before sending.
    let command: Result<Command, AccountdClientError>
    let parse: Parse

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, command: command, parse: parse)
    }

    /// Sends the request on the first ``next()`` and yields one element per reply.
    public final class Iterator: AsyncIteratorProtocol {
        private let client: AccountdClient
        private let command: Result<Command, AccountdClientError>
        private let parse: Parse
        private var started = false
        private var finished = false
        /// Reply lines taken from the client and not yet parsed.
        private var pending: ArraySlice<ArraySlice<UInt8>> = []

        init(client: AccountdClient, command: Result<Command, AccountdClientError>, parse: @escaping Parse) {
            self.client = client
            self.command = command
            self.parse = parse
        }

        /// The next element, or nil after the last reply.
        ///
        /// - Throws: ``AccountdClientError``: the daemon's error reply, or a lost connection.
        public func next() async throws -> Element? {
            try await next(isolation: nil)
        }

        /// The next element, running on the caller's actor: a `for try await` loop takes
        /// each of a batch's replies without a hop to another executor, which would cost
        /// more than parsing the reply (an export has one reply per row).
        public func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> Element? {
            guard !finished else { return nil }
            if !started {
                started = true
                do {
                    try await client.begin(command.get(), more: true)
                } catch {
                    finished = true  // refused before sending, or begin has let the connection go
                    throw error
                }
            }
            do {
                while true {
                    if pending.isEmpty { pending = try await client.nextLines() }
                    let (element, last) = try parse(&pending, client)
                    if last {
                        finished = true
                        await client.giveBack(pending)
                        pending = []
                        await client.finish()
                    }
                    if let element { return element }
                    if last { return nil }
                }
            } catch {
                if !finished {
                    finished = true
                    await client.giveBack(pending)  // an error reply ends the request too
                    pending = []
                    await client.finish()
                }
                throw error
            }
        }

        deinit {
            // Left before the last reply: the rest would arrive ahead of the next request's.
            guard started, !finished else { return }
            let client = client
            Task { await client.abandon() }
        }
    }
}

extension ReplyStream {
    /// A stream whose continuing replies decode as `element` and whose last as `last`.
    init(
        client: AccountdClient, command: Result<Command, AccountdClientError>,
        element: @escaping @Sendable (JSONValue) throws(ReplyDecodingError) -> Element,
        last: @escaping @Sendable (JSONValue) throws(ReplyDecodingError) -> Element?
    ) {
        self.init(client: client, command: command) { lines, client throws(AccountdClientError) in
            let reply = try client.reply(lines.removeFirst())
            do throws(ReplyDecodingError) {
                return reply.continues ? (try element(reply.parameters), false) : (try last(reply.parameters), true)
            } catch {
                throw .unexpectedReply(error)
            }
        }
    }
}
