import Foundation

/// Runs async work to its end from libFuzzer's (synchronous) thread.
enum Blocking {
    static func wait(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await body()
            done.signal()
        }
        done.wait()
    }
}
