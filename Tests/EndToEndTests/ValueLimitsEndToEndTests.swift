import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// `Set`'s limits on a value against the real daemon and its own client: the inline and the
/// JSON form refuse the same values, and whatever is accepted, `accountctl get` and a running
/// `accountctl watch` read back.
@Suite struct ValueLimitsEndToEndTests {
    /// `depth` nested arrays around `1`.
    static func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
    }

    static func jsonSet(_ key: String, _ value: String) -> String {
        #"{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"\#(key)","value":\#(value)}}"#
    }

    /// A value at the nesting limit (126) is accepted in both forms and read back by
    /// `accountctl get` and by a running `accountctl watch`; one level deeper is `InvalidValue`
    /// in both forms, and the watch goes on to see later events.
    @Test func theNestingLimitIsOneForEveryFormAndTheClientReadsWhatWasAccepted() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)

        // A running watch, as a user starts it; subscribed once it has printed a probe.
        let watchDir = dir.sub("watch")
        try FileManager.default.createDirectory(atPath: watchDir, withIntermediateDirectories: true)
        let watch = try Binaries.start(Binaries.accountctl, ["--socket", daemon.socket, "--json", "watch"], logDirectory: watchDir)
        defer { if watch.isRunning { watch.terminate() } }
        let watchOutput = watchDir + "/accountctl.out"
        func watched() -> [JSONValue] {
            let text = (try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
        }
        var probes = 0
        let subscribed = waitUntil(timeout: 20, interval: 0.1) {
            probes += 1
            _ = try? client.callOne("set user probe \(probes)")
            return watched().contains { $0["key"] == "probe" }
        }
        try #require(subscribed, "accountctl watch printed nothing: \((try? String(contentsOfFile: watchDir + "/accountctl.err", encoding: .utf8)) ?? "")")

        let limit = ValueLimits.maximumDepth
        let atLimit = Self.nested(limit)
        let expected = try JSONParser.parse(atLimit)
        #expect(try client.callOne("set user inline \(atLimit)").error == nil)
        #expect(try client.callOne(Self.jsonSet("json", atLimit)).error == nil)
        for request in ["set user deeper \(Self.nested(limit + 1))", Self.jsonSet("deeper", Self.nested(limit + 1))] {
            let refused = try client.callOne(request)
            #expect(refused.error == .invalidValue, "\(request.prefix(40)): \(refused.parameters)")
            #expect(refused.parameters["limit"] == .int(Int64(limit)))
            #expect(refused.message?.contains("\(limit)") == true)
        }
        #expect(try client.callOne("get user deeper").error == .keyNotFound)
        #expect(try client.callOne("set user after 1").error == nil)

        for key in ["inline", "json"] {
            let get = try E2E.accountctl(["get", "user", key], socket: daemon.socket)
            #expect(get.status == 0, "accountctl get user \(key): \(get.stderr)")
            #expect((try? JSONParser.parse(get.stdout.trimmingCharacters(in: .whitespacesAndNewlines))) == expected, "\(get.stdout.prefix(200))")
        }
        // The watch read every event, the deep ones too, and is still running.
        #expect(waitUntil(timeout: 10, interval: 0.05) { watched().contains { $0["key"] == "after" } }, "the watch stopped before 'after'")
        #expect(watch.isRunning, "accountctl watch exited: \((try? String(contentsOfFile: watchDir + "/accountctl.err", encoding: .utf8)) ?? "")")
        let deep = watched().filter { $0["key"] == "inline" || $0["key"] == "json" }
        #expect(deep.count == 2)
        #expect(deep.allSatisfy { $0["value"] == expected })
        #expect(!watched().contains { $0["key"] == "deeper" })
    }

    /// An integer beyond 64 bits is refused in both forms, naming the range, and nothing is
    /// stored; the same magnitude as a real, and a real like 1.5e300, come back exactly.
    @Test func integersBeyond64BitsAreRefusedAndRealsOfAnySizeKept() throws {
        let dir = TestDirectory()
        let daemon = try E2E.daemon(directory: dir.path)
        defer { _ = E2E.stop(daemon) }
        let client = try daemon.client()
        #expect(try client.callOne("switch alice").error == nil)

        for huge in ["18446744073709551615", "-9223372036854775809", "[1,18446744073709551615]"] {
            for request in ["set user n \(huge)", Self.jsonSet("n", huge)] {
                let refused = try client.callOne(request)
                #expect(refused.error == .invalidValue, "\(request): \(refused.parameters)")
                #expect(refused.message?.contains("9223372036854775807") == true, "\(refused.message ?? "")")
            }
        }
        #expect(try client.callOne("get user n").error == .keyNotFound)
        let cli = try E2E.accountctl(["set", "user", "n", "18446744073709551615"], socket: daemon.socket)
        #expect(cli.status != 0 && cli.stderr.contains("9223372036854775807"), "\(cli)")

        let kept: [(String, JSONValue)] = [
            ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)), ("1.5e300", .double(1.5e300)),
            ("1.8446744073709552e19", .double(18_446_744_073_709_551_616)),
        ]
        for (index, (text, value)) in kept.enumerated() {
            #expect(try client.callOne("set user inline\(index) \(text)").error == nil)
            #expect(try client.callOne(Self.jsonSet("json\(index)", text)).error == nil)
            for key in ["inline\(index)", "json\(index)"] {
                let got = try client.callOne("get user \(key)").parameters["value"]
                #expect(got == value, "\(text) came back as \(got?.serialized() ?? "nothing")")
                if case .double = value { #expect(got?.intValue == nil) }
            }
        }
    }
}
