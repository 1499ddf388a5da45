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

    /// The failures `record` kept (none without one).
    init(record: FailureRecord? = nil, logger: Logger? = nil) {
        self.record = record
        var loaded: [AccountName: FailureRecord.Failure] = [:]
        do {
            for (name, failure) in try record?.load() ?? [:] {
                if let account = try? AccountName(name) { loaded[account] = failure }
            }
        } catch {
            logger?.error("\(error)")
        }
        failed = Mutex(loaded)
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

    /// The failure of `account` that counts under the bundle with `fingerprint`, if it has one.
    func failure(of account: AccountName, underBundle fingerprint: String) -> FailureRecord.Failure? {
        failed.withLock { $0[account] }.flatMap { $0.applies(underBundle: fingerprint) ? $0 : nil }
    }

    /// Every failed account's failure that counts under the bundle with `fingerprint`.
    func all(underBundle fingerprint: String) -> [AccountName: FailureRecord.Failure] {
        failed.withLock { $0 }.filter { $0.value.applies(underBundle: fingerprint) }
    }

    private func save(on pool: BlockingPool, logger: Logger) async {
        guard let record else { return }
        do {
            try await saves.run {
                let now = self.failed.withLock { Dictionary(uniqueKeysWithValues: $0.map { ($0.key.rawValue, $0.value) }) }
                try await pool.run { try record.save(now) }
            }
        } catch {
            logger.error("the record of failed accounts could not be saved: \(error); they count as failed until a restart")
        }
    }
}

extension FailureRecord.Failure {
    /// Says the failure in `status` where the file alone does not show it: an account found
    /// damaged inside (its header reads well) is `corrupt`, with the reason.
    func overlay(on status: inout AccountStatus) {
        guard state == "corrupt", status.state != .missing else { return }
        status.state = .corrupt
        status.problem = message
    }
}
