import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// SPEC sections 6 and 10 under a stream of hostile bytes: many connections at once send
/// a seeded mixture of valid requests, truncated JSON, huge numbers, deep nesting,
/// invalid UTF-8, NULs, stray carriage returns and lines around the size limit; some
/// close abruptly mid-line. Every reply is a well-formed line, replies come in order, and
/// afterwards the daemon still pings, switches and reports status with its memory in bounds.
@Suite struct StreamFuzzTests {
    static let limit = 16 * 1024

    /// What one connection ends with.
    enum Ending: CaseIterable { case orderly, midLine, reset, unread }

    /// Builds one random request line (without its line ending), or a fragment.
    struct Generator {
        var random: Hostile.Random
        let limit: Int

        static let valid = [
            "ping", "status", "status alice", "info", "list", "switch alice", "switch bob", "get user theme", "keys user",
            #"set user theme "dark""#, "set switch beta {\"on\":true}", "del memory nothing",
            #"{"method":"io.accountd.Ping"}"#, #"{"method":"io.accountd.Status","parameters":{"account":"bob"}}"#,
            #"{"method":"io.accountd.Switch","parameters":{"account":"bob"},"more":true}"#,
            #"{"method":"io.accountd.List","parameters":{"details":true},"more":true}"#,
            #"{"method":"io.accountd.Set","parameters":{"namespace":"memory","key":"k","value":[1,2,{"a":null}]}}"#,
            #"{"method":"io.accountd.Get","parameters":{"namespace":"switch","key":"beta"}}"#,
            #"{"method":"io.accountd.Export","parameters":{"account":"alice","format":"jsonl"},"more":true}"#,
            #"{"method":"io.accountd.Verify","parameters":{"account":"alice"}}"#,
        ]
        static let numbers = [
            "1e999999", "-1e999999", "123456789012345678901234567890123456789", "-0", "1e-400", "0.0000000000000000000000001",
            "9223372036854775808", "-9223372036854775809", "1" + String(repeating: "0", count: 400), "NaN", "Infinity", "0x10", "01",
        ]

        mutating func line() -> [UInt8] {
            switch random.below(14) {
            case 0, 1, 2:
                return Array(random.pick(Self.valid).utf8)
            case 3:  // truncated JSON
                let text = Array(random.pick(Self.valid.filter { $0.hasPrefix("{") }).utf8)
                return Array(text.prefix(1 + random.below(text.count - 1)))
            case 4:  // huge and odd numbers, in values and where strings belong
                let number = random.pick(Self.numbers)
                return Array(
                    random.pick([
                        #"{"method":"io.accountd.Set","parameters":{"namespace":"memory","key":"n","value":\#(number)}}"#,
                        #"{"method":"io.accountd.Status","parameters":{"account":\#(number)}}"#, "set memory n \(number)",
                        #"{"method":"io.accountd.Ping","more":\#(number)}"#,
                    ]).utf8)
            case 5:  // deep nesting, inside and outside a request
                let depth = 100 + random.below(3000)
                let open = random.chance(50) ? "[" : "{\"a\":"
                let nest = String(repeating: open, count: depth)
                return Array(
                    (random.chance(50) ? nest : #"{"method":"io.accountd.Set","parameters":{"namespace":"memory","key":"d","value":\#(nest)}}"#).utf8)
            case 6:  // invalid UTF-8 inside a valid-looking request
                var text = Array(random.pick(Self.valid).utf8)
                text.insert(contentsOf: random.pick([[0xFF], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF], [0x80]]), at: random.below(text.count + 1))
                return text
            case 7:  // NUL bytes
                var text = Array(random.pick(Self.valid).utf8)
                for _ in 0...random.below(3) { text.insert(0, at: random.below(text.count + 1)) }
                return text
            case 8:  // stray carriage returns
                var text = Array(random.pick(Self.valid).utf8)
                for _ in 0...random.below(3) { text.insert(0x0D, at: random.below(text.count + 1)) }
                return text
            case 9:  // random bytes (no newline inside)
                return random.bytes(1 + random.below(400)).map { $0 == 0x0A ? 0x20 : $0 }
            case 10:  // a request padded to just under the limit (served) or to the limit exactly
                let base = Array(#"{"method":"io.accountd.Set","parameters":{"namespace":"memory","key":"big","value":""}}"#.utf8)
                let target = limit - random.below(3)
                var text = Array(base.dropLast(3))
                text += [UInt8](repeating: UInt8(ascii: "x"), count: max(0, target - base.count))
                text += Array(#""}}"#.utf8)
                return text
            case 11:  // inline words that are almost right
                return Array(
                    random.pick([
                        "SWITCH", "switch  ", "status \t alice", "export alice xml", "set user", "get", "PiNg x", "watch now",
                        "list --details", "migrate", "restore alice ../../x", "keys", "del user",
                    ]).utf8)
            case 12:  // JSON that is not a request
                return Array(random.pick(["{}", "[]", "null", "\"ping\"", "{\"method\":[]}", "{\"method\":\"\"}", "{\"more\":true}", "{\"a\":1,\"a\":2}"]).utf8)
            default:  // an empty line, or only blanks
                return Array(random.pick(["", " ", "\t", "   \t "]).utf8)
            }
        }
    }

    @Test func randomStreamsOnManyConnections() throws {
        let started = Date()
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path, environment: ["ACCOUNTD_REQUESTS_MAX_BYTES": String(Self.limit)])
        let setup = try daemon.client()
        #expect(try setup.callOne("switch bob").error == nil)
        #expect(try setup.callOne("switch alice").error == nil)
        let pid = daemon.process.processIdentifier
        // Warm up the code paths once so that the baseline is not the daemon's first breath.
        for _ in 0..<50 { _ = try setup.callOne("status alice") }
        let rssBefore = try #require(Hostile.rssKiB(pid))

        let socket = daemon.socket
        let limit = Self.limit
        let problems = E2E.Locked<[String]>([])
        let counts = E2E.Locked<[String: Int]>([:])
        let connections = E2E.Locked(0)
        let internals = E2E.Locked<[String]>([])
        let linesSent = E2E.Locked(0)
        let threads = 8
        let perThread = 150
        let deadline = Date().addingTimeInterval(10)
        let group = DispatchGroup()
        for worker in 0..<threads {
            group.enter()
            Thread {
                defer { group.leave() }
                var generator = Generator(random: Hostile.Random(seed: 0xF022_0000 + UInt64(worker)), limit: limit)
                // Bounded in time as well as in count: no connection starts after the deadline.
                for index in 0..<perThread where Date() < deadline {
                    let tag = "fz\(worker)x\(index)"
                    do {
                        let sent = try Self.runConnection(socket: socket, tag: tag, generator: &generator, problems: problems, counts: counts, internals: internals)
                        linesSent.withLock { $0 += sent }
                        connections.withLock { $0 += 1 }
                    } catch {
                        problems.withLock { $0.append("\(tag): \(error)") }
                    }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success, "the fuzz clients did not finish")
        #expect(problems.current.isEmpty, "\(problems.current.count) problems, e.g. \(problems.current.prefix(5))")
        #expect(connections.current >= 400, "only \(connections.current) connections before the deadline")

        // Bad input gets a clear error, never "internal error": show what the log says about any.
        let log = daemon.log
        let internalDetails = internals.current.map { message -> String in
            let reference = message.components(separatedBy: "reference ").dropFirst().first?.prefix(8) ?? ""
            return log.split(separator: "\n").first { $0.contains("internal error \(reference)") }.map(String.init) ?? message
        }
        let isRace = { (message: String) in message.contains("are closed; retry") || message.contains("SQLite error 21") }
        let closedRace = internalDetails.filter(isRace)
        let otherInternal = internalDetails.filter { !isRace($0) }
        #expect(otherInternal.isEmpty, "\(otherInternal.count) InternalError replies: \(otherInternal.prefix(3))")
        #expect(closedRace.isEmpty, "\(closedRace.count) InternalError replies: \(closedRace.prefix(1))")

        // Still serving: ping, switch and status, on a fresh connection and on the first one.
        #expect(daemon.process.isRunning)
        let after = try Hostile.client(daemon.socket)
        #expect(try after.callOne("ping").parameters == [:])
        let switched = try after.callOne("switch bob")
        #expect(switched.error == nil, "\(switched.encoded())")
        #expect(switched.parameters["action"] == "opened")
        let status = try after.callOne("status")
        #expect(status.parameters["active"] == "bob")
        #expect(status.parameters["state"] == "ready")
        #expect(try after.callOne("status alice").parameters["state"] == "current")
        #expect(try setup.callOne("ping").error == nil)
        #expect(Hostile.integrity(daemon.accountPath("alice")) == "ok")

        // Memory did not balloon: the connections are gone, and so are their buffers.
        _ = waitUntil(timeout: 3, interval: 0.1) { (Hostile.rssKiB(pid) ?? .max) < rssBefore + 32 * 1024 }
        let rssAfter = try #require(Hostile.rssKiB(pid))
        let elapsed = Date().timeIntervalSince(started)
        print(
            "StreamFuzzTests: \(connections.current) connections, \(linesSent.current) lines, replies by name \(counts.current.sorted { $0.key < $1.key }), "
                + "RSS \(rssBefore / 1024) MiB before, \(rssAfter / 1024) MiB after, \(String(format: "%.1f", elapsed)) s")
        #expect(rssAfter < rssBefore + 64 * 1024, "RSS grew from \(rssBefore) KiB to \(rssAfter) KiB")
        #expect(elapsed < 15, "the fuzz run took \(elapsed) s")
        // Every kind of reply turned up: successes, and errors of several names.
        let names = counts.current
        #expect(names["ok", default: 0] > 100)
        for expected in ["io.accountd.InvalidRequest", "org.varlink.service.MethodNotFound", "io.accountd.RequestTooLarge"] {
            #expect(names[expected, default: 0] > 0, "no \(expected) in \(names)")
        }
    }

    /// One connection's worth of fuzz; returns the number of lines sent.
    static func runConnection(
        socket: String, tag: String, generator: inout Generator, problems: E2E.Locked<[String]>, counts: E2E.Locked<[String: Int]>,
        internals: E2E.Locked<[String]>
    ) throws -> Int {
        let client = try Hostile.client(socket, timeout: 20)
        let ending = generator.random.pick(Ending.allCases)
        var payload: [UInt8] = []
        var lines = 0
        var closesEarly = false  // an oversized line ends the connection on the daemon's side
        var watching = false
        for _ in 0..<(1 + generator.random.below(60)) {
            var line = generator.line()
            if generator.random.chance(3) {
                // Over the limit: RequestTooLarge, then the daemon closes; nothing after it is served.
                line = [UInt8](repeating: UInt8(ascii: "y"), count: generator.limit + 1 + generator.random.below(3))
                closesEarly = true
            }
            if line.starts(with: Array("{\"method\":\"io.accountd.Watch".utf8)) || line.starts(with: Array("watch".utf8)) { watching = true }
            payload += line
            payload += generator.random.chance(30) ? [0x0D, 0x0A] : [0x0A]
            lines += 1
            if closesEarly { break }
        }
        // A marker request last: its reply must be the last line, proving order and completeness.
        let marker = #"{"method":"io.accountd.Status","parameters":{"account":"\#(tag)"}}"#
        switch ending {
        case .orderly:
            payload += Array((marker + "\n").utf8)
            // Sent in random pieces, so lines straddle reads.
            var offset = 0
            while offset < payload.count {
                let piece = min(payload.count - offset, 1 + generator.random.below(4096))
                do { try client.send(Array(payload[offset..<offset + piece])) } catch { break }  // closed after RequestTooLarge
                offset += piece
            }
            client.finishSending()
            var last: Reply?
            while true {
                let line: String?
                do { line = try client.readLine() } catch {
                    if "\(error)".contains("temporarily unavailable") { problems.withLock { $0.append("\(tag): no end of stream") } }
                    break  // ECONNRESET after RequestTooLarge with our bytes unread
                }
                guard let line else { break }
                do {
                    let reply = try Reply.decode(Array(line.utf8))
                    counts.withLock { $0[reply.error?.rawValue ?? "ok", default: 0] += 1 }
                    if reply.error == .internalError { internals.withLock { $0.append(reply.message ?? "") } }
                    if reply.error != nil && (reply.message ?? "").isEmpty { problems.withLock { $0.append("\(tag): error without a message: \(line.prefix(200))") } }
                    last = reply
                } catch {
                    problems.withLock { $0.append("\(tag): malformed reply line: \(line.prefix(200))") }
                }
            }
            if !closesEarly && !watching {
                if last?.parameters["account"] != .string(tag) || last?.parameters["exists"] != false {
                    problems.withLock { $0.append("\(tag): the marker's reply was not last: \(last?.encoded().prefix(200) ?? "nothing")") }
                }
            } else if closesEarly, last?.error != .requestTooLarge, !watching {
                problems.withLock { $0.append("\(tag): the last reply was not RequestTooLarge: \(last?.encoded().prefix(200) ?? "nothing")") }
            }
        case .midLine:
            // Everything, then half a request, then close without reading.
            payload += Array(marker.utf8.prefix(1 + generator.random.below(marker.utf8.count - 1)))
            _ = client.sendNonBlocking(payload)
        case .reset:
            client.abortOnClose()
            _ = client.sendNonBlocking(payload + Array(marker.utf8.prefix(10)))
        case .unread:
            _ = client.sendNonBlocking(payload + Array((marker + "\n").utf8))
            // Close once the daemon has begun answering, so replies are left unread.
            _ = client.waitUntilReadable(timeout: 5)
        }
        return lines
    }

    /// Found by the fuzz above, reduced: a `Set` on the active account while another client
    /// switches to that same account must be applied or wait (SPEC section 5: one operation
    /// per account at a time, the other waits), never fail as an internal error.
    @Test func setsRacingASwitchToTheSameAccount() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        #expect(try daemon.client().callOne("switch bob").error == nil)
        let socket = daemon.socket
        let base = dir.path
        let errors = E2E.Locked<[String: Int]>([:])
        let acknowledged = E2E.Locked(0)
        let setters = DispatchGroup()
        let switcher = DispatchGroup()
        let done = E2E.Locked(false)
        let switches = E2E.Locked(0)
        for worker in 0..<3 {
            let group = worker == 0 ? switcher : setters
            group.enter()
            Thread {
                defer { group.leave() }
                guard let client = try? Hostile.client(socket) else { return }
                var index = 0
                // The switcher switches to the active account again and again until the setters are done.
                while worker == 0 ? !done.current : index < 250 {
                    let request = worker == 0 ? "switch bob" : "set user k\(worker) \(index)"
                    guard let reply = try? client.callOne(request) else { return }
                    if let error = reply.error {
                        errors.withLock { $0["\(request.prefix(6)) \(error.rawValue): \(reply.message ?? "")".replacingOccurrences(of: base, with: "…"), default: 0] += 1 }
                    } else if worker == 0 {
                        switches.withLock { $0 += 1 }
                    } else {
                        acknowledged.withLock { $0 += 1 }
                    }
                    index += 1
                }
            }.start()
        }
        #expect(setters.wait(timeout: .now() + 60) == .success)
        done.withLock { $0 = true }
        #expect(switcher.wait(timeout: .now() + 10) == .success)
        print("StreamFuzzTests race: \(acknowledged.current) Sets acknowledged, \(switches.current) switches, errors \(errors.current)")
        #expect(errors.current.isEmpty, "\(errors.current)")
        // Whatever was acknowledged is there.
        let client = try daemon.client()
        for worker in 1...2 {
            let reply = try client.callOne("get user k\(worker)")
            #expect(reply.error == nil)
        }
        #expect(acknowledged.current > 0)
    }
}
