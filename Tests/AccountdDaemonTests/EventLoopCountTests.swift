import AccountdTestSupport
import Foundation
import NIOCore
import Testing

/// The real daemon runs one event loop fewer than the cores it may use, at least one; NIO's
/// `NIO_SINGLETON_GROUP_LOOP_COUNT`, when set, decides instead.
@Suite struct EventLoopCountTests {
    @Test func oneLoopFewerThanTheCoresAndAtLeastOne() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path)
        defer { _ = daemon.stop() }
        let loops = Self.loopThreads(of: daemon.process.processIdentifier)
        #expect(loops.count == max(1, System.coreCount - 1), "cores \(System.coreCount), loops \(loops)")
    }

    @Test func theEnvironmentVariableDecidesWhenSet() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, environment: ["NIO_SINGLETON_GROUP_LOOP_COUNT": "3"])
        defer { _ = daemon.stop() }
        let loops = Self.loopThreads(of: daemon.process.processIdentifier)
        #expect(loops.count == 3, "\(loops)")
        // The daemon answers on them.
        #expect(try daemon.client().callOne("status").error == nil)
    }

    @Test func aValueThatIsNoNumberIsSaidAndIgnored() throws {
        let dir = TestDirectory()
        let daemon = try DaemonProcess(directory: dir.path, environment: ["NIO_SINGLETON_GROUP_LOOP_COUNT": "two"])
        defer { _ = daemon.stop() }
        let loops = Self.loopThreads(of: daemon.process.processIdentifier)
        #expect(loops.count == max(1, System.coreCount - 1), "\(loops)")
        let log = (try? String(contentsOfFile: dir.path + "/accountd.log", encoding: .utf8)) ?? ""
        #expect(log.contains("NIO_SINGLETON_GROUP_LOOP_COUNT=two is not a whole number"), "\(log)")
    }

    /// The names of process `pid`'s event loop threads (NIO names its shared group's
    /// `NIO-SGLTN-<group>-#<loop>`).
    static func loopThreads(of pid: Int32) -> [String] {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return threads.compactMap { thread in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            return name.flatMap { $0.hasPrefix("NIO-SGLTN-") ? $0 : nil }
        }.sorted()
    }
}
