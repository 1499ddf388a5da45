import Foundation

/// Checks `condition` every `interval` until it holds or `timeout` passes; returns whether
/// it held.
///
/// How tests wait for something to happen (a daemon ready, a file written, an event
/// received, a process gone): as long as it takes and no longer, with a deadline that
/// turns a hang into a failure.
public func waitUntil(timeout: TimeInterval = 30, interval: TimeInterval = 0.01, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: interval)
    }
    return try condition()
}
