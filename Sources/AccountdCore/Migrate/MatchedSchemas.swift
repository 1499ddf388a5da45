import Synchronization

/// Schemas already found equal to the bundle's target, remembered by their definitions in
/// `sqlite_master`, so that a fleet of accounts migrated to the same schema compares it
/// field by field once.
///
/// A schema is wholly defined by its `sqlite_master` rows: the normalized form
/// (``SchemaReader``) is read from those definitions through SQLite's pragmas. Two files
/// whose rows are the same text therefore have the same normalized schema, and a file whose
/// rows differ in any byte (another order, a comment) is simply compared in full. One set
/// per store: a store with another bundle starts with none.
final class MatchedSchemas: Sendable {
    /// How many distinct definitions are remembered; past that, the set starts again.
    static let capacity = 16
    private let matched = Mutex(Set<String>())

    func contains(_ definitions: String) -> Bool {
        matched.withLock { $0.contains(definitions) }
    }

    func insert(_ definitions: String) {
        matched.withLock { set in
            if set.count >= Self.capacity { set.removeAll() }
            set.insert(definitions)
        }
    }
}
