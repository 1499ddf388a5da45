import AccountdProtocol
import Foundation

/// An account as its Litestream replica had it at a past time: `Restore {account, at}`.
///
/// `litestream restore -timestamp` (by the replica's URL, through ``ReplicaCommand``) writes
/// the replica's state at that time into a private folder made afresh under `accounts/`
/// (`.<account>.sqlite.rewinding/`, a name no account can have, where no one else can plant a link). A dry run first says which of
/// Litestream's files the state is made of, and so the time it really has: the newest of those
/// files' timestamps, which is at or before the time asked for; the restore then stops at the
/// dry run's last transaction, so the copy holds that very state. The copy is then checked like a
/// pulled file (a regular file, made private; an accountd file bound to this account at a
/// version the caller accepts); the store writes it into the account
/// (``AccountStore/restore(_:copy:holding:)``) and the caller removes the staging file
/// (``discard(_:)``).
public struct ReplicaTimeTravel: Sendable {
    public var root: DataRoot
    public var replica: ReplicaURL
    public var command: ReplicaCommand

    /// The replica's state, fetched.
    public struct Fetched: Sendable {
        /// The staging file holding it.
        public var path: String
        /// The time the state has, to the millisecond: the earliest time a restore gives it
        /// (the newest of the files it was made of, as Litestream stamps them).
        public var at: Date
        /// The last Litestream transaction in it (hexadecimal, as Litestream prints it).
        public var txid: String?
        /// The file's schema version.
        public var version: Int
    }

    public init(root: DataRoot, replica: ReplicaURL, litestream: LitestreamProgram) {
        self.root = root
        self.replica = replica
        command = ReplicaCommand(root: root, litestream: litestream)
    }

    /// Fetches `account` as the replica had it at `at` into its staging file: Litestream is
    /// awaited (no thread waits for it), the file work runs on `blocking`.
    ///
    /// - Parameter accept: decides whether the copy's version may be used here; throws to refuse it.
    /// - Throws: ``AccountdError``: `snapshotNotFound` when `at` is before the replica's
    ///   history (the message and `details` give the earliest time there is), `accountNotFound`
    ///   when the replica holds nothing for the account, `accountCorrupt` when the copy is not a
    ///   sound file of this account, `storage` when Litestream or the disk fails. The staging
    ///   file is gone then.
    public func fetch(
        _ account: AccountName, at: Date, on blocking: some BlockingRunner,
        accept: @escaping @Sendable (_ version: Int, _ lastCompatible: Int) throws -> Void
    ) async throws -> Fetched {
        let source = replica.account(account)
        let shown = replica.redact(source)
        let root = self.root
        // A private folder made afresh: no name Litestream writes through can be planted.
        let temp = try await blocking.run { try root.makeLitestreamStaging(account, .rewinding) }
        do {
            let timestamp = LitestreamTime.format(at)
            // Litestream's retention and compaction may remove the planned files between the
            // dry run and the restore ("no matching backup files"): the plan is made again.
            var attempt = 1
            var planned: (run: LitestreamProgram.Run, time: Date)
            while true {
                do {
                    planned = try await restoreAsPlanned(account, at: at, timestamp: timestamp, source: source, into: temp, on: blocking)
                } catch let error as AccountdError where error.kind == .storage && error.message.contains("no matching backup") && attempt < 3 {
                    attempt += 1
                    continue
                }
                guard planned.run.status != 0, planned.run.errors.contains("no matching backup"), attempt < 3 else { break }
                attempt += 1
            }
            let (run, stateTime) = planned
            guard run.status == 0 else {
                throw AccountdError(
                    .storage,
                    "litestream restore of account \(account) at \(timestamp) from \(shown) failed (exit status \(run.status)): \(replica.redact(run.errors.trimmingCharacters(in: .whitespacesAndNewlines))); nothing was changed",
                    account: account.rawValue, file: shown)
            }
            let facts: AccountFacts
            do {
                facts = try await blocking.run {
                    try Self.makePrivate(account, temp)
                    let facts = try AccountInspector.inspect(path: temp, account: account, deep: false)
                    try accept(facts.version, facts.lastCompatibleVersion)
                    return facts
                }
            } catch let error as AccountdError where error.reason != nil {
                // Said of the replica's state, not of the account here, which is untouched.
                var refusal = error
                refusal.message =
                    "the replica's state of account \(account) at \(timestamp) (\(shown)) was refused: it \(error.reason ?? "is not usable"). "
                    + "That copy was removed and account \(account) here was not changed. Restore at another time, or check the replica"
                refusal.file = shown
                throw refusal
            }
            let txid = (try? JSONParser.parse(run.output)).flatMap { $0["txid"]?.stringValue }
            return Fetched(path: temp, at: stateTime, txid: txid, version: facts.version)
        } catch {
            _ = try? await blocking.run { try? root.clearStaging(account, .rewinding) }
            throw error
        }
    }

    /// A dry run at `timestamp` (which fixes the state and its time), then the restore of that
    /// very state into `temp` (stopping at the plan's last transaction): Litestream's run and
    /// the state's time.
    private func restoreAsPlanned(
        _ account: AccountName, at: Date, timestamp: String, source: String, into temp: String, on blocking: some BlockingRunner
    ) async throws -> (run: LitestreamProgram.Run, time: Date) {
        let plan = try await dryRun(timestamp, source: source, into: temp, on: blocking)
        let files = (plan.parsed?["files"]?.arrayValue ?? []).compactMap { $0["timestamp"]?.stringValue.flatMap(LitestreamTime.parse) }
        guard let printed = files.max() else { throw try await refusal(account, at: at, source: source, said: plan.errors, on: blocking) }
        let planned = plan.parsed?["max_txid"]?.stringValue
        let stateTime = try await preciseTime(of: planned, printed: printed, asked: at, source: source, into: temp, on: blocking)
        let root = self.root
        _ = try await blocking.run { try root.makeLitestreamStaging(account, .rewinding) }
        // The restore stops at the planned transaction: an upload landing since the dry run
        // (a newer state the time asked also covers) is not restored under the older time.
        let target = planned.map { ["-txid", $0] } ?? ["-timestamp", timestamp]
        let run = try await command.run("restore", ["-json"] + target + ["-o", temp], source: source, on: blocking)
        return (run, stateTime)
    }

    /// Removes the staging file a ``fetch(_:at:on:accept:)`` left. Blocking.
    public func discard(_ account: AccountName) {
        try? root.clearStaging(account, .rewinding)
    }

    /// The time the state Litestream restores at `asked` really has, to the millisecond
    /// Litestream compares times at: the earliest time at which a restore gives the same
    /// transaction (`txid`, the plan's `max_txid`). Litestream prints its files' times cut to
    /// the second (`printed`), while it stamps and compares them to the millisecond, so a state
    /// holding a write of 09.387 has a time of 09.387, and a restore at 09.000 gives an older one.
    ///
    /// Found by dry runs (at most ten) between `printed`, cut to the second, and the earlier of
    /// `asked` and the end of that second: a restore at the time reported gives this very state.
    private func preciseTime(
        of txid: String?, printed: Date, asked: Date, source: String, into temp: String, on blocking: some BlockingRunner
    ) async throws -> Date {
        guard let txid else { return printed }
        var low = Int64((printed.timeIntervalSince1970).rounded(.down)) * 1000
        var high = min(Int64((asked.timeIntervalSince1970 * 1000).rounded()), low + 999)
        guard high > low else { return Date(timeIntervalSince1970: Double(max(low, high)) / 1000) }
        while low < high {
            let middle = low + (high - low) / 2
            let plan = try await dryRun(LitestreamTime.format(Date(timeIntervalSince1970: Double(middle) / 1000)), source: source, into: temp, on: blocking)
            // At or past the transaction: an upload landing meanwhile keeps the search in order.
            if Self.reaches(plan.parsed?["max_txid"]?.stringValue, txid) { high = middle } else { low = middle + 1 }
        }
        return Date(timeIntervalSince1970: Double(low) / 1000)
    }

    /// Whether a plan's last transaction is `txid` or a later one (both hexadecimal).
    private static func reaches(_ planned: String?, _ txid: String) -> Bool {
        guard let planned, let reached = UInt64(planned, radix: 16), let wanted = UInt64(txid, radix: 16) else { return planned == txid }
        return reached >= wanted
    }

    /// Litestream's dry run of a restore at `timestamp`: its JSON (nil when it refused: a time
    /// before the history, nothing in the replica, a store it cannot read) and its errors.
    private func dryRun(
        _ timestamp: String, source: String, into temp: String, on blocking: some BlockingRunner
    ) async throws -> (parsed: JSONValue?, errors: String) {
        let plan = try await command.run(
            "restore", ["-dry-run", "-json", "-timestamp", timestamp, "-o", temp], source: source, within: LitestreamProgram.listingTimeout, on: blocking)
        return (plan.status == 0 ? try? JSONParser.parse(plan.output) : nil, plan.errors)
    }

    /// The second the replica's earliest files of the account were stamped in (a file that
    /// begins at the first transaction: a snapshot or a compaction from the start); nil when
    /// the replica holds nothing for it.
    private func earliestSecond(source: String, on blocking: some BlockingRunner) async throws -> Date? {
        let files = try await command.files(source: source, redact: replica.redact, on: blocking)
        let starts = files.filter { UInt64($0.minTXID, radix: 16) == 1 }
        return (starts.isEmpty ? files : starts).map(\.timestamp).min().map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded(.down)) }
    }

    /// The earliest time the replica can give `account` at, to the millisecond
    /// (``preciseTime(of:printed:asked:source:into:on:)``): what a refusal names, and what a
    /// restore at it reports as `at`. Nil when the replica holds nothing for the account.
    ///
    /// Its files may be stamped later than the state (a compaction), so the first of the next
    /// three seconds at which Litestream plans a restore bounds the search.
    private func earliestState(source: String, into temp: String, on blocking: some BlockingRunner) async throws -> Date? {
        guard let start = try await earliestSecond(source: source, on: blocking) else { return nil }
        for candidate in [start, start.addingTimeInterval(1), start.addingTimeInterval(2)] {
            let plan = try await dryRun(LitestreamTime.format(candidate), source: source, into: temp, on: blocking)
            let files = (plan.parsed?["files"]?.arrayValue ?? []).compactMap { $0["timestamp"]?.stringValue.flatMap(LitestreamTime.parse) }
            if let printed = files.max() {
                return try await preciseTime(of: plan.parsed?["max_txid"]?.stringValue, printed: printed, asked: candidate, source: source, into: temp, on: blocking)
            }
        }
        return start
    }

    /// Why Litestream could not restore `account` at `at`: before the replica's history (with
    /// the earliest time there is), nothing in the replica at all, or Litestream's own words.
    private func refusal(_ account: AccountName, at: Date, source: String, said: String, on blocking: some BlockingRunner) async throws -> AccountdError {
        let shown = replica.redact(source)
        guard let earliest = try await earliestState(source: source, into: root.litestreamOutputPath(account, .rewinding), on: blocking) else {
            return AccountdError(
                .accountNotFound, "the replica \(shown) holds nothing for account \(account); there is nothing to restore from it",
                account: account.rawValue, file: shown)
        }
        let asked = LitestreamTime.format(at)
        if at < earliest {
            let text = LitestreamTime.format(earliest)
            return AccountdError(
                .snapshotNotFound,
                "the replica \(shown) has account \(account) from \(text) on; \(asked) is before its history (how far back it reaches is Litestream's retention: replication.litestream.retentionHours). Restore at \(text) or later; nothing was changed",
                account: account.rawValue, file: shown, details: ["earliest: \(text)"])
        }
        return AccountdError(
            .storage,
            "litestream could not restore account \(account) at \(asked) from \(shown): \(replica.redact(said.trimmingCharacters(in: .whitespacesAndNewlines))); nothing was changed",
            account: account.rawValue, file: shown)
    }

    /// Checks that the staging file is a regular file, not a link, and makes it 0600 through
    /// a descriptor opened without following links.
    private static func makePrivate(_ account: AccountName, _ path: String) throws {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw AccountdError.corrupt(account, path: path, "is not a regular file where Litestream's copy should be (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw AccountdError.corrupt(account, path: path, "is not a regular file where Litestream's copy should be")
        }
        guard fchmod(fd, 0o600) == 0 else { throw AccountdError.storage("making the restored copy private:", path: path, errno: errno) }
    }
}
