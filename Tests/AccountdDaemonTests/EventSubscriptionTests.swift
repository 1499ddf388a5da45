import AccountdProtocol
import Testing

@testable import AccountdDaemon

/// A watcher's queue is bounded by bytes as well as by count, drops the oldest, and says
/// how many it dropped before the events it kept.
@Suite struct EventSubscriptionTests {
    static func event(_ index: Int, bytes: Int) -> JSONValue {
        ["event": "changed", "value": .string("\(index) " + String(repeating: "x", count: bytes))]
    }

    @Test func largeEventsAreBoundedByBytesAndTheOldestAreReportedMissed() async {
        let subscription = EventSubscription(limit: 10_000, byteLimit: 1_000_000) {}
        let published = 100
        for index in 0..<published {
            let event = Self.event(index, bytes: 100_000)
            subscription.publish(event, bytes: event.textSize())
        }
        let first = await subscription.next()
        #expect(first == WatchEvent.missed(count: 91).parameters, "\(first.map { String($0.serialized().prefix(80)) } ?? "nil")")
        var kept: [Int] = []
        for _ in 0..<9 {
            guard case .string(let text)? = await subscription.next()?["value"] else { break }
            kept.append(Int(text.prefix { $0 != " " }) ?? -1)
        }
        #expect(kept == Array(91..<100))
        subscription.finish()
    }

    @Test func theNewestEventIsKeptHoweverLarge() async {
        let subscription = EventSubscription(limit: 10_000, byteLimit: 1_000) {}
        for index in 0..<3 {
            let event = Self.event(index, bytes: 5_000)
            subscription.publish(event, bytes: event.textSize())
        }
        #expect(await subscription.next() == WatchEvent.missed(count: 2).parameters)
        #expect(await subscription.next()?["value"]?.stringValue?.hasPrefix("2 ") == true)
        subscription.finish()
    }

    @Test func smallEventsAreStillBoundedByCount() async {
        let subscription = EventSubscription(limit: 10, byteLimit: 8 << 20) {}
        for index in 0..<25 { subscription.publish(["n": JSONValue(index)], bytes: 30) }
        #expect(await subscription.next() == WatchEvent.missed(count: 15).parameters)
        #expect(await subscription.next()?["n"] == 15)
        subscription.finish()
    }

    @Test func theSizeIsAboutTheCompactJSON() {
        let event = Self.event(7, bytes: 10_000)
        let exact = event.serialized().utf8.count
        #expect(abs(event.textSize() - exact) < 64, "\(event.textSize()) vs \(exact)")
    }
}
