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
        /// The fingerprint of the bundle it failed under. A failure counts under any bundle
        /// until an open or a migration of the account is tried again (under the bundle then
        /// in force): success clears it, failure replaces it; so a hotfix release (or a
        /// rollback) does not hide an account that failed before anyone tried it again.
        public var bundle: String?

        public init(error: String, state: String, message: String, bundle: String?, at: Date = Date()) {
            self.error = error
            self.state = state
            self.message = message
            self.bundle = bundle
            self.at = Timestamp.string(at)
        }
    }

    public let path: String

    public init(root: DataRoot) { path = root.path + "/failures.json" }

    /// What ``load()`` read: the failures, and what of the file could not be read.
    public struct Loaded: Sendable {
        /// The failures of the entries that read well.
        public var failures: [String: Failure] = [:]
        /// Each entry that could not be read, by account name, with why; skipped, the others count.
        public var skipped: [(account: String, reason: String)] = []
        /// Where a file that was not a JSON object at all was moved aside, its records lost.
        public var movedAside: String?

        /// How many records were lost: the entries skipped, and a file moved aside counts one.
        public var lost: Int { skipped.count + (movedAside == nil ? 0 : 1) }

        /// Nothing read: no file.
        public init() {}
    }

    /// The failures recorded, read entry by entry; none when the file is missing. Blocking.
    ///
    /// An entry that is not a well-formed failure (a field missing, a wrong type) is skipped
    /// and named in ``Loaded/skipped``; the others count. A file that is not a JSON object at
    /// all is moved aside to `failures.json.damaged-<time>` (kept for whoever looks into it,
    /// and never overwritten by the next save), named in ``Loaded/movedAside``.
    ///
    /// - Throws: `storage` when the file cannot be read, or a damaged one cannot be moved aside.
    public func load() throws -> Loaded {
        guard FileSystem.exists(path) else { return Loaded() }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AccountdError(.storage, "\(path) cannot be read: \(error); the failed accounts it records count as they are until it can be", file: path)
        }
        var loaded = Loaded()
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            let aside = path + ".damaged-" + Timestamp.string(Date()).replacingOccurrences(of: ":", with: "")
            do {
                try FileSystem.durableRename(path, to: aside)
            } catch {
                throw AccountdError(.storage, "\(path) is not a JSON object, and moving it aside to \(aside) failed: \(error)", file: path)
            }
            loaded.movedAside = aside
            return loaded
        }
        for (account, value) in object {
            do {
                let entry = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
                loaded.failures[account] = try JSONDecoder().decode(Failure.self, from: entry)
            } catch {
                loaded.skipped.append((account, Self.reason(error)))
            }
        }
        loaded.skipped.sort { $0.account < $1.account }
        return loaded
    }

    /// Why an entry could not be read, in a few words.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "it has no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context), DecodingError.dataCorrupted(let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
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
