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

    /// A save that could not replace `failures.json`.
    public struct NotSaved: Error, CustomStringConvertible {
        /// What failed, and where the record went.
        public var message: String
        /// Whether the record was kept in ``FailureRecord/unsavedPath``, to be read at the next start.
        public var keptAside: Bool
        public var description: String { message }
    }

    public let path: String
    /// Where a save that could not replace ``path`` keeps the record instead, when it can
    /// (`failures.json.unsaved`): ``load()`` reads it back at the next start, and the next
    /// save that replaces ``path`` removes it.
    public var unsavedPath: String { path + ".unsaved" }

    public init(root: DataRoot) { path = root.path + "/failures.json" }

    /// What ``load()`` read: the failures, and what of the file could not be read.
    public struct Loaded: Sendable {
        /// The failures of the entries that read well.
        public var failures: [String: Failure] = [:]
        /// Each entry that could not be read, by account name, with why; skipped, the others count.
        public var skipped: [(account: String, reason: String)] = []
        /// Where a file that was not a JSON object at all was moved aside, its records lost.
        public var movedAside: String?
        /// True when the failures were read from ``FailureRecord/unsavedPath``: the last save
        /// could not replace `failures.json`, and the record it kept beside it is newer.
        public var fromUnsaved = false
        /// The temporary files of saves that did not finish, removed at load.
        public var leftovers: [String] = []

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
    /// A record kept in ``unsavedPath`` by a save that could not replace `failures.json` is
    /// read instead when it is the newer of the two (or `failures.json` is not a file), and
    /// the temporary files of saves that did not finish are removed (``Loaded/leftovers``).
    /// Call it at start only, before any save.
    ///
    /// - Throws: `storage` when the file cannot be read, or a damaged one cannot be moved aside.
    public func load() throws -> Loaded {
        let leftovers = FileSystem.removeWriteLeftovers(of: path) + FileSystem.removeWriteLeftovers(of: unsavedPath)
        var loaded: Loaded
        if unsavedIsNewer() {
            loaded = try read(unsavedPath)
            loaded.fromUnsaved = true
        } else {
            loaded = try read(path)
        }
        loaded.leftovers = leftovers
        return loaded
    }

    /// Whether ``unsavedPath`` holds a record newer than ``path``'s (or ``path`` is not a file).
    private func unsavedIsNewer() -> Bool {
        var unsaved = stat()
        guard lstat(unsavedPath, &unsaved) == 0, (unsaved.st_mode & S_IFMT) == S_IFREG else { return false }
        var saved = stat()
        guard lstat(path, &saved) == 0, (saved.st_mode & S_IFMT) == S_IFREG else { return true }
        return (unsaved.st_mtim.tv_sec, unsaved.st_mtim.tv_nsec) > (saved.st_mtim.tv_sec, saved.st_mtim.tv_nsec)
    }

    /// The failures recorded in the file at `path`, entry by entry (``load()``).
    private func read(_ path: String) throws -> Loaded {
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

    /// Replaces the record with `failures` (the file goes when there are none), and removes
    /// a record kept in ``unsavedPath`` before. Blocking.
    ///
    /// When `failures.json` cannot be replaced (a full disk, a folder in its place), the record
    /// is kept in ``unsavedPath`` if that can be written, for ``load()`` at the next start; no
    /// temporary file is left either way.
    ///
    /// - Throws: ``NotSaved`` when `failures.json` cannot be written, saying whether the record
    ///   was kept in ``unsavedPath``.
    public func save(_ failures: [String: Failure]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(failures)
        do {
            if failures.isEmpty { try FileSystem.removeIfPresent(path) } else { try FileSystem.atomicWrite(data, to: path) }
        } catch {
            let kept = (try? FileSystem.atomicWrite(data, to: unsavedPath)) != nil
            throw NotSaved(
                message: "\(error); "
                    + (kept
                        ? "the record was kept in \(unsavedPath) instead, which the daemon reads at its next start"
                        : "it could not be kept in \(unsavedPath) either"),
                keptAside: kept)
        }
        // Left behind only if it cannot be removed: older than failures.json, it is not read.
        try? FileSystem.removeIfPresent(unsavedPath)
    }
}
