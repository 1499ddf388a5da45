import Foundation

/// `failures.json` under the data root: the accounts whose last attempt to be opened under
/// the bundle failed, kept across restarts so that a failed account is still counted
/// `failed` (or `corrupt`, ...) after the daemon starts again, until an open of it succeeds.
///
/// One small JSON object, account name to failure, replaced atomically at each change.
public struct FailureRecord: Sendable {
    /// One account's failure.
    public struct Failure: Codable, Sendable, Equatable {
        /// The error's short wire name, e.g. `MigrationFailed`.
        public var error: String
        /// The state the account counts in: `failed`, `corrupt`, `too_new` or `unavailable`.
        public var state: String
        /// The error's message: what happened and what to do.
        public var message: String
        /// When it failed (ISO 8601).
        public var at: String
        /// The fingerprint of the bundle it failed under: a migration or an `on-open.sql` that
        /// failed says nothing about the account under another bundle (a rollback, a fix).
        public var bundle: String?

        public init(error: String, state: String, message: String, bundle: String?, at: Date = Date()) {
            self.error = error
            self.state = state
            self.message = message
            self.bundle = bundle
            self.at = Timestamp.string(at)
        }

        /// Whether it still counts under the bundle with `fingerprint`: damage inside a file
        /// does under any bundle, a failed migration or `on-open.sql` only under its own.
        public func applies(underBundle fingerprint: String) -> Bool {
            state == "corrupt" || bundle == nil || bundle == fingerprint
        }
    }

    public let path: String

    public init(root: DataRoot) { path = root.path + "/failures.json" }

    /// The failures recorded; none when the file is missing. Blocking.
    ///
    /// - Throws: `storage` when the file cannot be read or parsed.
    public func load() throws -> [String: Failure] {
        guard FileSystem.exists(path) else { return [:] }
        do {
            return try JSONDecoder().decode([String: Failure].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw AccountdError(.storage, "\(path) cannot be read: \(error); remove it, and the accounts that fail fail again at their next open", file: path)
        }
    }

    /// Replaces the record with `failures` (the file goes when there are none). Blocking.
    ///
    /// - Throws: `storage` when it cannot be written.
    public func save(_ failures: [String: Failure]) throws {
        if failures.isEmpty { return try FileSystem.removeIfPresent(path) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try FileSystem.atomicWrite(try encoder.encode(failures), to: path)
    }
}
