import Synchronization

/// A value that a reload can replace while requests read it.
final class Reloadable<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) { self.value = Mutex(value) }

    var current: Value { value.withLock { $0 } }

    func replace(_ newValue: Value) { value.withLock { $0 = newValue } }

    /// Replaces the value and returns the one it replaced.
    @discardableResult
    func swap(_ newValue: Value) -> Value {
        value.withLock { old in
            defer { old = newValue }
            return old
        }
    }
}
