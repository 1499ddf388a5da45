import AccountdProtocol
import Foundation

/// What must hold of the bytes the dispatcher writes for one request, whatever the request.
///
/// A broken invariant stops the process with `preconditionFailure`, which libFuzzer
/// reports as a crash and saves the input for.
struct ReplyInvariants {
    /// Every error name the protocol defines (`ErrorName`).
    static let errorNames: Set<String> = Set(
        [
            ErrorName.invalidAccountName, .accountNotFound, .accountTooNew, .accountCorrupt, .accountBusy, .accountActive, .migrationFailed,
            .noActiveAccount, .namespaceNotFound, .keyNotFound, .invalidValue, .permissionDenied, .requestTooLarge,
            .invalidRequest, .shuttingDown, .tooManyConnections, .snapshotNotFound, .internalError, .methodNotFound,
            .invalidParameter, .expectedMore, .statementNotAllowed, .sqlError, .queryTimeout,
        ].map(\.rawValue))

    /// What SQL looks like (as in `SecurityTests.sqlShapes`); none of it may reach a client in an error.
    static let sqlShapes = [
        "create table", "create view", "create trigger", "create index", "create unique index", "insert into", "insert or",
        "select ", "delete from", "alter table", "drop table", "drop view", "drop trigger",
    ]

    /// The request line, for failure messages.
    let line: [UInt8]
    /// Text the client chose (the request's strings, the accounts on disk): an error may
    /// quote it, so SQL-looking text in it is not a leak.
    let clientText: () -> [String]
    /// More to show when a check fails (what the daemon logged, where the history is).
    let context: () -> String

    /// Checks the replies to a decoded request, and returns them.
    ///
    /// - Every reply is a complete `\n`-terminated line that `Reply.decode` accepts, with
    ///   object parameters.
    /// - There is at least one; the last has `continues` false and every one before it
    ///   true; a request without `more` gets exactly one.
    /// - Errors (the reply's, and a Migrate result's) have a known name, a message, no SQL
    ///   text, and are never `InternalError`.
    @discardableResult
    func check(_ bytes: [UInt8], for request: Request) -> [Reply] {
        require(!bytes.isEmpty, "\(request.method.rawValue) got no reply", bytes)
        require(bytes.last == 0x0A, "the last reply to \(request.method.rawValue) is not a complete line", bytes)
        var replies: [Reply] = []
        for text in bytes.dropLast().split(separator: 0x0A, omittingEmptySubsequences: false) {
            require(!text.isEmpty, "an empty reply line", bytes)
            let reply: Reply
            do {
                reply = try Reply.decode(text)
            } catch {
                fail("a reply line does not decode: \(error)", Array(text))
            }
            require(reply.parameters.objectValue != nil, "a reply's parameters are not an object", Array(text))
            replies.append(reply)
        }
        for (index, reply) in replies.enumerated() {
            let last = index == replies.count - 1
            require(
                reply.continues != last,
                last ? "the last reply has continues: true" : "reply \(index + 1) of \(replies.count) has no continues: true", bytes)
            if let error = reply.error {
                checkError(error.rawValue, message: reply.message, parameters: reply.parameters, bytes)
            }
            if request.method == .migrate, let name = reply.parameters["error"]?.stringValue {
                checkError(name, message: reply.parameters["message"]?.stringValue, parameters: reply.parameters, bytes)
            }
        }
        require(request.more || replies.count == 1, "\(request.method.rawValue) without more got \(replies.count) replies", bytes)
        return replies
    }

    /// Checks that a request answered at once gets the same reply when a task handles it.
    func checkAgreement(atOnce: [UInt8], task: [UInt8], for request: Request) {
        guard task != atOnce else { return }
        check(task, for: request)
        fail(
            "\(request.method.rawValue) answered at once and by a task differently; at once: \(String(decoding: atOnce, as: UTF8.self))",
            task)
    }

    /// Checks the error reply to a line that did not decode: it survives encoding and decoding.
    func checkUndecodable(_ reply: Reply) {
        let bytes = Array(reply.encoded().utf8)
        let decoded: Reply
        do {
            decoded = try Reply.decode(bytes.dropLast())
        } catch {
            fail("the error reply to an undecodable line does not decode: \(error)", bytes)
        }
        require(decoded.error == reply.error && decoded.message == reply.message, "the error reply changed on a round trip", bytes)
        require(decoded.error != nil, "an undecodable line got a success reply", bytes)
        checkError(decoded.error!.rawValue, message: decoded.message, parameters: decoded.parameters, bytes, sqlFree: false)
    }

    private func checkError(_ name: String, message: String?, parameters: JSONValue, _ bytes: [UInt8], sqlFree: Bool = true) {
        require(Self.errorNames.contains(name), "unknown error name \(name)", bytes)
        require(name != ErrorName.internalError.rawValue, "InternalError: an unexpected error path", bytes)
        require(!(message ?? "").isEmpty, "an error reply without a message", bytes)
        guard sqlFree else { return }
        var texts: [String] = []
        Self.strings(in: parameters, into: &texts)
        let found = texts.map { $0.lowercased() }.filter { text in Self.sqlShapes.contains { text.contains($0) } }
        guard !found.isEmpty else { return }
        // Only now (it is rare): take out what the client wrote, whole and cut as the daemon cuts it.
        var quoted: [String] = []
        for text in clientText() {
            for length in [Int.max, 1024, 128, 64, 32] { quoted.append(String(text.prefix(length)).lowercased()) }
        }
        quoted = quoted.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        for var text in found {
            for piece in quoted { text = text.replacingOccurrences(of: piece, with: "\u{1}") }
            let shape = Self.sqlShapes.first { text.contains($0) }
            require(shape == nil, "an error reply carries SQL text ('\(shape ?? "")')", bytes)
        }
    }

    static func strings(in value: JSONValue, into out: inout [String]) {
        switch value {
        case .string(let text): out.append(text)
        case .array(let items): for item in items { strings(in: item, into: &out) }
        case .object(let pairs):
            for (key, item) in pairs {
                out.append(key)
                strings(in: item, into: &out)
            }
        default: break
        }
    }

    private func require(_ condition: Bool, _ what: @autoclosure () -> String, _ bytes: [UInt8]) {
        if !condition { fail(what(), bytes) }
    }

    private func fail(_ what: String, _ bytes: [UInt8]) -> Never {
        let request = String(decoding: line, as: UTF8.self)
        let replies = String(decoding: bytes.prefix(4000), as: UTF8.self)
        FileHandle.standardError.write(
            Data("\n== DispatchFuzzer: \(what)\n== request: \(request)\n== replies:\n\(replies)\n\(context())\n".utf8))
        preconditionFailure(what)
    }
}
