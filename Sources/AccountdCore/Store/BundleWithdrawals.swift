import AccountdProtocol
import Synchronization

/// The bundles whose migrations may still be running, and the interrupt that stops each one's
/// when a reload withdraws it; shared by the stores ``AccountStore/replacing(bundle:options:)`` makes.
///
/// A reload that brings a bundle under which a running migration's target is not reachable (an
/// older release put back, or one whose steps differ) withdraws the bundle the migration runs
/// under: its migrations are interrupted (``SQLiteInterrupt``) and roll back whole, the file at
/// its old version with all its rows, and nothing more begins under it. A bundle that the new one
/// extends (the same steps, and more) is not withdrawn: what its migrations commit is a version
/// the new bundle migrates on from.
final class BundleWithdrawals: Sendable {
    /// A bundle in force now or before, not withdrawn, with the interrupt of its migrations.
    private struct Live: Sendable {
        var bundle: SchemaBundle
        var interrupt: SQLiteInterrupt
    }

    private let live: Mutex<[Live]>

    init(first bundle: SchemaBundle, interrupt: SQLiteInterrupt) {
        live = Mutex([Live(bundle: bundle, interrupt: interrupt)])
    }

    /// Puts `bundle` in force: every live bundle it does not reach is withdrawn (its interrupt
    /// stopped, and dropped from the list); returns the interrupt for `bundle`'s migrations
    /// (the same as before for an unchanged bundle).
    func bringing(_ bundle: SchemaBundle) -> SQLiteInterrupt {
        live.withLock { live in
            for entry in live where !bundle.reaches(entry.bundle) { entry.interrupt.stop() }
            live.removeAll { $0.interrupt.isStopped }
            if let same = live.first(where: { $0.bundle.fingerprint == bundle.fingerprint }) { return same.interrupt }
            let interrupt = SQLiteInterrupt()
            live.append(Live(bundle: bundle, interrupt: interrupt))
            return interrupt
        }
    }
}

extension SchemaBundle {
    /// Whether a file a migration under `earlier` brings to its target version is one this
    /// bundle can migrate on from: the same bundle, or a chain that has `earlier`'s migrations,
    /// unchanged, and maybe more. A declarative bundle reaches only one with the same version
    /// and target schema.
    func reaches(_ earlier: SchemaBundle) -> Bool {
        if fingerprint == earlier.fingerprint { return true }
        if declarative != nil || earlier.declarative != nil {
            return declarative != nil && earlier.declarative != nil && targetVersion == earlier.targetVersion && targetSchema == earlier.targetSchema
        }
        guard migrations.count >= earlier.migrations.count else { return false }
        return zip(earlier.migrations, migrations).allSatisfy { $0.sha256 == $1.sha256 }
    }
}

extension AccountdError {
    /// Whether this says an account was not begun at all because a reload withdrew the bundle
    /// before its turn came (``withdrawnBeforeOpen(_:bundle:path:)``): a rollout reports it
    /// `skipped`, not failed. A migration that was stopped says the version it stayed at.
    public var isWithdrawnBeforeOpen: Bool { kind == .withdrawn && fromVersion == nil }

    /// Whether this says a migration was stopped, rolled back whole, because a reload withdrew
    /// its bundle (``withdrawnMigration(_:bundle:from:file:line:)``): interrupted, not the account's failure.
    public var isWithdrawnMigration: Bool { kind == .withdrawn && fromVersion != nil }

    /// `account` was not opened under `bundle` because a reload withdrew it before the account's turn came.
    static func withdrawnBeforeOpen(_ account: AccountName, bundle: SchemaBundle, path: String) -> AccountdError {
        AccountdError(
            .withdrawn,
            "account \(account) was not opened: a reload withdrew bundle version \(bundle.targetVersion) (\(bundle.directory)) before its turn came; "
                + "its file is as it was; open or migrate it again to bring it to the bundle now in force",
            account: account.rawValue, file: path, toVersion: bundle.targetVersion)
    }

    /// The migration of `account` from `from` under `bundle` was stopped because a reload withdrew `bundle`.
    static func withdrawnMigration(_ account: AccountName, bundle: SchemaBundle, from: Int, file: String, line: Int?) -> AccountdError {
        AccountdError(
            .withdrawn,
            "the migration of account \(account) from version \(from) to \(bundle.targetVersion) was stopped because a reload withdrew bundle version \(bundle.targetVersion) "
                + "(\(bundle.directory)); rolled back, account \(account) stays at version \(from) with all its rows; "
                + "it is brought to the bundle now in force at its next open (accountctl migrate \(account))",
            account: account.rawValue, file: file, line: line, fromVersion: from, toVersion: bundle.targetVersion)
    }
}
