#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a lock, with a condition that threads wait on until the value is
/// what they need or a deadline passes.
///
/// For the one place where a thread must wait for another: a synchronous caller queued for
/// an account (``AccountLocks/acquireBlocking(_:timeout:)``, used by the command-line tools;
/// the daemon always waits in a task). It sleeps until woken, never in a poll loop. Deadlines are on the monotonic clock, so a
/// wall clock set back cannot stretch a wait. Never wait on an event loop or in a task.
final class Monitor<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is read and written only while `mutex` is held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if os(Linux)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the value, under the lock.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Wakes every waiting thread, to look at the value again. Call it after a change
    /// that a waiter may be waiting for.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Waits until `ready` holds for the value, or until `deadline` passes (never, when nil).
    ///
    /// - Returns: whether `ready` holds: false only when the deadline passed first.
    @discardableResult
    func wait(until deadline: ContinuousClock.Instant? = nil, for ready: (Value) -> Bool) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let deadline else {
            while !ready(value) { pthread_cond_wait(condition, mutex) }
            return true
        }
        while !ready(value) {
            let left = deadline - ContinuousClock.now
            guard left > .zero, timedWait(left) else { return ready(value) }
        }
        return true
    }

    /// Waits on the condition for at most `duration`; false when that time passed.
    private func timedWait(_ duration: Duration) -> Bool {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Int(attoseconds / 1_000_000_000)
        #if os(Linux)
        var limit = timespec()
        clock_gettime(CLOCK_MONOTONIC, &limit)
        limit.tv_sec += Int(seconds) + (limit.tv_nsec + nanoseconds) / 1_000_000_000
        limit.tv_nsec = (limit.tv_nsec + nanoseconds) % 1_000_000_000
        return pthread_cond_timedwait(condition, mutex, &limit) != ETIMEDOUT
        #else
        var relative = timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)
        return pthread_cond_timedwait_relative_np(condition, mutex, &relative) != ETIMEDOUT
        #endif
    }
}
