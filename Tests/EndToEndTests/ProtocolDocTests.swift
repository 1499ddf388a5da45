import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// Every example in docs/PROTOCOL.md, replayed in order against a real daemon.
///
/// In a ```session block, `>` lines are requests, `<` lines the replies expected (in
/// order), and `!` lines requests sent on a second connection once the Watch before them
/// runs. A `"…"` in an expected reply matches any value.
@Suite struct ProtocolDocTests {
    enum Step {
        case request(String)
        case reply(String)
        case aside(String)
    }

    static func sessions() throws -> [[Step]] {
        let text = try String(contentsOfFile: Repository.root + "/docs/PROTOCOL.md", encoding: .utf8)
        var sessions: [[Step]] = []
        var current: [Step]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "```session" {
                current = []
            } else if line == "```", let steps = current {
                sessions.append(steps)
                current = nil
            } else if current != nil {
                let body = String(line.dropFirst(2))
                switch line.first {
                case ">": current!.append(.request(body))
                case "<": current!.append(.reply(body))
                case "!": current!.append(.aside(body))
                default: break
                }
            }
        }
        return sessions
    }

    /// Whether `actual` matches `expected`, where the string "…" matches anything.
    static func matches(_ expected: JSONValue, _ actual: JSONValue) -> Bool {
        if expected == "…" { return true }
        switch (expected, actual) {
        case (.object(let e), .object(let a)):
            guard Set(e.map(\.0)) == Set(a.map(\.0)) else { return false }
            return e.allSatisfy { key, value in matches(value, actual[key]!) }
        case (.array(let e), .array(let a)):
            return e.count == a.count && zip(e, a).allSatisfy { matches($0, $1) }
        default:
            return expected == actual
        }
    }

    @Test func everyExampleHolds() throws {
        let sessions = try Self.sessions()
        #expect(sessions.count >= 14, "found \(sessions.count) session blocks")
        let documented = Set(sessions.joined().compactMap { step -> String? in
            guard case .request(let line) = step else { return nil }
            if let value = try? JSONParser.parse(line), let method = value["method"]?.stringValue { return method }
            return Method(inlineWord: String(line.split(separator: " ").first ?? "")).map(\.qualifiedName)
        })
        // Every method is shown at least once.
        for method in Method.allCases {
            #expect(documented.contains(method.qualifiedName), "docs/PROTOCOL.md has no example of \(method.rawValue)")
        }

        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        for (index, session) in sessions.enumerated() {
            let client = try daemon.client()
            for step in session {
                switch step {
                case .request(let line):
                    try client.send(line + "\n")
                case .aside(let line):
                    // An aside follows a Watch. A request behind the Watch is refused only once
                    // the Watch runs, so its refusal says the events that follow will reach it.
                    let probe = try client.callOne("ping")
                    try #require(probe.error == .invalidRequest, "session \(index + 1): an aside must follow a Watch; got \(probe.encoded())")
                    _ = try daemon.client().call(line)
                case .reply(let text):
                    let expected = try JSONParser.parse(text)
                    let line = try #require(try client.readLine(), "session \(index + 1): no reply, expected \(text)")
                    let actual = try JSONParser.parse(line)
                    #expect(Self.matches(expected, actual), "session \(index + 1):\n expected \(text)\n got      \(line)")
                }
            }
        }
        #expect(daemon.stop() == 0)
    }
}
