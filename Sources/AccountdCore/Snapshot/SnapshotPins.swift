import AccountdProtocol
import Synchronization

/// Snapshots that retention must not remove for now, whatever `snapshotsToKeep` says: the
/// one a `Restore` just copied back, while the daemon opens the restored account again (that
/// open may migrate it and take a `before-migrate` snapshot, whose retention would otherwise
/// count the restored one out).
///
/// Shared by the stores of one data root (``AccountStore/replacing(bundle:options:)``), so a
/// reload between a restore and its reopen keeps the pin.
public final class SnapshotPins: Sendable {
    private let pinned = Mutex<[AccountName: [String: Int]]>([:])

    public init() {}

    /// Keeps `name` of `account` from retention until ``unpin(_:_:)``; pins nest.
    public func pin(_ account: AccountName, _ name: String) {
        pinned.withLock { $0[account, default: [:]][name, default: 0] += 1 }
    }

    /// Ends one ``pin(_:_:)`` of `name`.
    public func unpin(_ account: AccountName, _ name: String) {
        pinned.withLock { all in
            guard let count = all[account]?[name] else { return }
            all[account]?[name] = count > 1 ? count - 1 : nil
            if all[account]?.isEmpty == true { all[account] = nil }
        }
    }

    /// The names of `account`'s pinned snapshots.
    func names(_ account: AccountName) -> Set<String> {
        pinned.withLock { Set(($0[account] ?? [:]).keys) }
    }
}
