import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import Synchronization

/// The accounts whose last attempt to be opened under the bundle failed, with the error,
/// until an open of them succeeds: the metrics count them by the failure (`failed`,
/// `corrupt`, `too_new`, `unavailable`), and `Status`/`List` say `corrupt` for an account
/// found damaged inside though its header reads well.
///
/// Kept in `failures.json` under the data root (``FailureRecord``) too, so that a failed
/// account still counts after a restart. Each failure also leaves a log line naming the
/// account, the versions and the error (``ErrorMapping``), since the metrics carry no
/// account label.
final class AccountFailures: Sendable {
    private let failed: Mutex<[AccountName: FailureRecord.Failure]>
    private let record: FailureRecord?
    /// Saves one at a time; each writes the record as it is when its turn comes, so the
    /// last save leaves the newest state.
    private let saves = SerialGate()

    /// How many records `failures.json` held that could not be read at start: entries skipped,
    /// and a damaged file moved aside (counts one).
    let lostAtStart: Int
    /// How many records are held only in memory because the last save could not write
    /// `failures.json` (nor keep them in `failures.json.unsaved`): lost at the next restart
    /// unless a later save succeeds; 0 once one does. Saves are tried again at each scrape
    /// (``saveAgainIfUnsaved(on:logger:)``).
    private let unsaved = Mutex(0)

    /// The records lost, or at risk of being lost, shown in the metrics
    /// (`accountd_failure_records_lost`, which fires AccountdFailureRecordLost): those that
    /// could not be read at start, and those the last save could not keep on disk.
    var lost: Int { lostAtStart + unsaved.withLock { $0 } }

    /// The failures `record` kept (none without one). An entry that cannot be read is skipped
    /// with a log line naming it; a file that is not JSON at all is moved aside (``FailureRecord/load()``).
    init(record: FailureRecord? = nil, logger: Logger? = nil) {
        self.record = record
        var loaded: [AccountName: FailureRecord.Failure] = [:]
        var lost = 0
        do {
            let read = try record?.load() ?? FailureRecord.Loaded()
            for (name, failure) in read.failures {
                if let account = try? AccountName(name) { loaded[account] = failure }
            }
            for skipped in read.skipped {
                logger?.error(
                    "\(record?.path ?? "failures.json"): the entry of account \(skipped.account) cannot be read (\(skipped.reason)); it is skipped, the other entries count. If that account fails, it fails again at its next open",
                    metadata: ["account": "\(skipped.account)"])
            }
            if !read.leftovers.isEmpty {
                logger?.notice(
                    "removed \(read.leftovers.count) temporary file(s) of saves of the record of failed accounts that did not finish: \(read.leftovers.joined(separator: ", "))")
            }
            if read.fromUnsaved, let record {
                logger?.warning(
                    "the record of failed accounts was read from \(record.unsavedPath), where the last save kept it because \(record.path) could not be written; it is written to \(record.path) at the next save")
            }
            if let aside = read.movedAside {
                logger?.error(
                    "\(record?.path ?? "failures.json") is not a JSON object: it was moved aside to \(aside) and its records are lost; the accounts that failed count again once they fail at their next open (accountctl migrate --all tries every account)")
            }
            lost = read.lost
        } catch {
            logger?.error("\(error)")
            lost = 1
        }
        failed = Mutex(loaded)
        lostAtStart = lost
    }

    /// The state a failure of `kind` counts the account in: a full or failing disk (`storage`)
    /// is `unavailable`, as `Status ACCOUNT` says (docs/OPERATIONS.md: AccountdAccountUnreadable).
    static func state(of kind: AccountdError.Kind?) -> String {
        if kind == .accountCorrupt { return "corrupt" }
        if kind == .accountTooNew { return "too_new" }
        if kind == .accountBusy || kind == .storage { return "unavailable" }
        return "failed"
    }

    /// `account` failed with `error` under the bundle with fingerprint `bundle`; saved on `pool`.
    func failed(_ account: AccountName, error: any Error, bundle: String, on pool: BlockingPool, logger: Logger) async {
        let failure = error as? AccountdError
        let entry = FailureRecord.Failure(
            error: failure?.wireName.shortName ?? ErrorName.internalError.shortName, state: Self.state(of: failure?.kind),
            message: failure?.message ?? "\(error)", bundle: bundle)
        failed.withLock { $0[account] = entry }
        await save(on: pool, logger: logger)
    }

    /// `account` opened, or was removed: it no longer counts as failed, and a purged
    /// account's name leaves `failures.json` (saved on `pool` if it was there).
    func succeeded(_ account: AccountName, on pool: BlockingPool, logger: Logger) async {
        guard failed.withLock({ $0.removeValue(forKey: account) }) != nil else { return }
        await save(on: pool, logger: logger)
    }

    /// `account`'s file was replaced by a sound one (a restore checks its copy whole first) or
    /// found sound by a full check (`Verify`): a record saying the file itself could not be
    /// used (`corrupt`, `too_new`, `unavailable`) goes; a `failed` one (a migration or an
    /// `on-open.sql` that failed) stays until an open of it succeeds.
    func fileFoundSound(_ account: AccountName, on pool: BlockingPool, logger: Logger) async {
        await clear(account, ifIn: ["corrupt", "too_new", "unavailable"], on: pool, logger: logger)
    }

    /// A statement (`Query`, `Execute`) used `account`'s file: a record saying it could not be
    /// opened or read (`unavailable`: the disk, a lock) or was too new for the bundle
    /// (`too_new`) goes. One saying it is `corrupt` stays (a statement reads only some of its
    /// pages; `Verify` reads all), as does a `failed` migration.
    func fileUsed(_ account: AccountName, on pool: BlockingPool, logger: Logger) async {
        guard let state = failure(of: account)?.state, state == "unavailable" || state == "too_new" else { return }
        await clear(account, ifIn: ["too_new", "unavailable"], on: pool, logger: logger)
    }

    private func clear(_ account: AccountName, ifIn states: Set<String>, on pool: BlockingPool, logger: Logger) async {
        let cleared = failed.withLock { failed -> Bool in
            guard let state = failed[account]?.state, states.contains(state) else { return false }
            failed[account] = nil
            return true
        }
        if cleared { await save(on: pool, logger: logger) }
    }

    /// Saves the record again when the last save could not (a metrics scrape calls it), so
    /// that records counted while the disk was full are kept once it is not.
    func saveAgainIfUnsaved(on pool: BlockingPool, logger: Logger) async {
        guard unsaved.withLock({ $0 }) > 0 else { return }
        await save(on: pool, logger: logger)
    }

    /// The failure of `account`, if it has one. It counts under any bundle until an open of the
    /// account is tried again (``FailureRecord/Failure/bundle``).
    func failure(of account: AccountName) -> FailureRecord.Failure? {
        failed.withLock { $0[account] }
    }

    /// Every failed account's failure.
    func all() -> [AccountName: FailureRecord.Failure] {
        failed.withLock { $0 }
    }

    private func save(on pool: BlockingPool, logger: Logger) async {
        guard let record else { return }
        // What is held only in memory is decided in turn with the saves, so the last one says it.
        _ = try? await saves.run {
            let now = self.failed.withLock { Dictionary(uniqueKeysWithValues: $0.map { ($0.key.rawValue, $0.value) }) }
            do {
                try await pool.run { try record.save(now) }
                self.unsaved.withLock { $0 = 0 }
            } catch {
                // Kept beside it (failures.json.unsaved, read at the next start) it is not lost;
                // else each record held counts lost in the metrics until a save succeeds.
                let kept = (error as? FailureRecord.NotSaved)?.keptAside == true
                let held = max(now.count, 1)
                self.unsaved.withLock { $0 = kept ? 0 : held }
                let outlook =
                    kept
                    ? "The failed accounts count as they are, also after a restart"
                    : "The \(held) record(s) count until a restart and are lost then unless a later save succeeds (tried again at each metrics scrape); accountd_failure_records_lost counts them meanwhile"
                logger.error("the record of failed accounts could not be saved: \(error). \(outlook)")
            }
        }
    }
}
