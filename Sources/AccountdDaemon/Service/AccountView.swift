import AccountdCore
import AccountdProtocol

/// What `Status ACCOUNT`, `List` with `details` and `accountd_accounts_by_state` say of one
/// account, decided in this one place so that the three never disagree: its file's state as
/// read (``AccountStore/status(_:locks:)``), the failure recorded of its last open
/// (``AccountFailures``), and whether this daemon migrates it now.
///
/// - A file that is missing is `missing` (counted `unavailable`), whatever was recorded.
/// - An account this daemon migrates now is `migrating`, and counted so: its file is at the
///   old version under the new bundle, neither current nor outdated for good.
/// - An account whose last open failed is said by its failure, whatever its file's header
///   says, until an open of it succeeds (or a restore, or a clean `Verify`, puts back a sound
///   file): `corrupt`, `too_new` and `unavailable` (a full or failing disk, another process's
///   lock) are its state, with the failure's message as the `problem`; a `failed` account (a
///   migration rolled back, an `on-open.sql` that fails) keeps its file's state, with the
///   failure as the `problem`, and counts `failed`.
enum AccountView {
    /// The states accounts are counted in: the `state` label of `accountd_accounts_by_state`,
    /// each present (at 0 when none is in it).
    static let labels = ["current", "outdated", "failed", "too_new", "corrupt", "unavailable", "migrating"]

    /// The state shown for a file read as `file`, and the problem to show with it (nil keeps
    /// the file's own).
    static func state(
        file: AccountStatus.State, failure: FailureRecord.Failure?, migrating: Bool
    ) -> (state: AccountStatus.State, problem: String?) {
        if file == .missing { return (.missing, nil) }
        if migrating { return (.migrating, nil) }
        guard let failure else { return (file, nil) }
        switch failure.state {
        case "corrupt": return (.corrupt, failure.message)
        case "too_new": return (.tooNew, failure.message)
        case "unavailable": return (.unavailable, failure.message)
        default: return (file, "the last attempt to open it failed (\(failure.error)): \(failure.message)")
        }
    }

    /// `status` as the views show it: its state and problem put together with `failure`.
    static func apply(to status: inout AccountStatus, failure: FailureRecord.Failure?, migrating: Bool) {
        let shown = state(file: status.state, failure: failure, migrating: migrating)
        status.state = shown.state
        if let problem = shown.problem { status.problem = problem }
    }

    /// The `state` label the account counts under in `accountd_accounts_by_state`.
    static func label(file: AccountStatus.State, failure: FailureRecord.Failure?, migrating: Bool) -> String {
        if !migrating, file != .missing, let failure, labels.contains(failure.state) { return failure.state }
        switch state(file: file, failure: failure, migrating: migrating).state {
        case .current, .compatibleNewer: return "current"
        case .outdated: return "outdated"
        case .migrating: return "migrating"
        case .tooNew: return "too_new"
        case .corrupt: return "corrupt"
        case .unavailable, .missing: return "unavailable"
        }
    }
}
