import AccountdProtocol
import Foundation

extension AccountStore {
    /// Pulls `account` from a Litestream replica (``ReplicaPull``) under `hold`, in its three
    /// steps: ``stagePull(_:with:holding:)`` on `blocking`, ``ReplicaPull/restore(_:)``
    /// awaited (no thread waits for Litestream), ``finishPull(_:after:with:holding:)`` on
    /// `blocking`; what was staged goes whatever fails. An account handed off from this host
    /// may be pulled back; the pull ends the handoff.
    ///
    /// - Parameter hold: the account's hold, taken before and kept until this returns.
    /// - Throws: what ``ReplicaPull/stage(_:)``, ``ReplicaPull/restore(_:)`` and
    ///   ``ReplicaPull/finish(_:after:accept:)`` throw, `accountTooNew`.
    public func pull(
        _ account: AccountName, with puller: ReplicaPull, holding hold: AccountHold, on blocking: some BlockingRunner
    ) async throws -> ReplicaPull.Outcome {
        let staged = try await blocking.run { try self.stagePull(account, with: puller, holding: hold) }
        do {
            let run = try await puller.restore(staged)
            return try await blocking.run { try self.finishPull(staged, after: run, with: puller, holding: hold) }
        } catch {
            _ = try? await blocking.run { puller.discard(staged) }
            throw error
        }
    }

    /// A pull's first step (``ReplicaPull/stage(_:)``) under the account's lock: blocking,
    /// files only. Then ``ReplicaPull/restore(_:)``, then ``finishPull(_:after:with:holding:)``
    /// or ``ReplicaPull/discard(_:)``, all under the same hold.
    ///
    /// An account handed off from this host may be pulled back from another replica (the new
    /// owner's, `--replica URL`): both steps run on a handed-off account, and
    /// ``ReplicaPull/finish(_:after:accept:)`` ends the handoff. A pull from the replica it
    /// was handed off to (this host's own, or when the record cannot be read) is refused with
    /// `accountMoved`: that copy is this host's own pre-handoff state, and taking it back is
    /// a reclaim, which must be said (``refusePullOfOwnHandoff(_:from:)``).
    ///
    /// - Parameter hold: the account's hold, taken before.
    /// - Throws: what ``ReplicaPull/stage(_:)`` throws, `accountMoved`.
    public func stagePull(_ account: AccountName, with puller: ReplicaPull, holding hold: AccountHold) throws -> ReplicaPull.Staged {
        try underLock(account, holding: hold, allowingMoved: true) {
            try Self.refusePullOfOwnHandoff(account, root: root, from: puller.replica)
            known.withLock { $0[account] = nil }
            return try puller.stage(account)
        }
    }

    /// A pull's last step (``ReplicaPull/finish(_:after:accept:)``) under the account's lock,
    /// refusing a copy at a version this bundle cannot read (`accountTooNew`), touching nothing.
    ///
    /// - Throws: what ``ReplicaPull/finish(_:after:accept:)`` throws, `accountTooNew`.
    public func finishPull(
        _ staged: ReplicaPull.Staged, after run: LitestreamProgram.Run, with puller: ReplicaPull, holding hold: AccountHold
    ) throws -> ReplicaPull.Outcome {
        try underLock(staged.account, holding: hold, allowingMoved: true) {
            known.withLock { $0[staged.account] = nil }
            return try puller.finish(staged, after: run) { version, lastCompatible in
                let facts = AccountFacts(version: version, lastCompatibleVersion: lastCompatible, createdAt: nil, applied: [])
                guard isUsable(facts) else { throw tooNew(staged.account, facts) }
            }
        }
    }
}

extension AccountStore {
    /// Writes the record that `account` is handed off from this host (``DataRoot/recordHandoff(_:replica:at:)``),
    /// under the account's lock, after checking that it has a file here.
    ///
    /// A handoff that a crash interrupted (the record written, the file still here) may be run
    /// again: the record is written afresh and the handoff goes on.
    ///
    /// - Returns: whether the account was recorded as handed off already (an interrupted handoff).
    /// - Throws: `accountMoved` when it was handed off and its file is gone, `accountNotFound`,
    ///   `accountCorrupt` (a link), `accountBusy`, `storage`.
    @discardableResult
    public func recordHandoff(_ account: AccountName, replica: String, holding hold: AccountHold? = nil) throws -> Bool {
        try underLock(account, holding: hold, allowingMoved: true) {
            let path = root.accountPath(account)
            let already = root.isHandedOff(account)
            guard case .regularFile = FileSystem.entry(at: path) else {
                if already { try root.refuseHandedOff(account) }
                throw AccountdError(
                    .accountNotFound, "account \(account) has no file here to hand off", account: account.rawValue, file: path)
            }
            // Before the record: an unlocked read that checked before it must check again.
            locks.changed()
            let now = Date()
            // In the file first, before the final sync ships it: the replica's newest state says
            // it was handed off, wherever this host's own record is lost (``HandoffMark``). A
            // record beside a file without the mark is then always a pull that a crash
            // interrupted after its link (``HandoffMark/finishInterruptedPulls(_:)``).
            try HandoffMark.write(path, replica: replica, at: now, busy: options.lockTimeout)
            do {
                try root.recordHandoff(account, replica: replica, at: now)
            } catch {
                if !already { try? HandoffMark.remove(path, busy: options.lockTimeout) }
                throw error
            }
            locks.changed()
            return already
        }
    }
}

extension AccountStore {
    /// Ends a handoff that did not happen (the final sync failed): the record goes, and the
    /// mark written into the file with it (``HandoffMark``), under the account's lock.
    public func abandonHandoff(_ account: AccountName, holding hold: AccountHold) throws {
        try underLock(account, holding: hold, allowingMoved: true) {
            try HandoffMark.remove(root.accountPath(account), busy: options.lockTimeout)
            locks.changed()
            try root.eraseHandoff(account)
            locks.changed()
        }
    }
}

extension AccountStore {
    /// Refuses (`accountMoved`) a pull of an account whose handoff a crash interrupted (the
    /// record written, its file still here: from any replica, naming how to finish it), and a
    /// pull of an account handed off from this host from the very replica it was handed off to: this host wrote that copy last, at the handoff, so the pull
    /// would silently bring back its stale pre-handoff state and end the fence while the new
    /// owner serves the account. The same replica is the same store however its URL is spelled
    /// (``ReplicaAddress/sameStore(_:_:)``). Nothing to refuse without a handoff record; a
    /// record that cannot be read refuses every pull (a fence fails closed).
    ///
    /// - Throws: `accountMoved` naming the explicit choices.
    public static func refusePullOfOwnHandoff(_ account: AccountName, root: DataRoot, from replica: ReplicaURL) throws {
        guard root.isHandedOff(account) else { return }
        let record = root.handoffRecord(account)
        // A handoff a crash interrupted (the record written, the file still here): from any
        // replica, the account is refused as every call refuses it, with the way to finish it.
        if FileSystem.entry(at: root.accountPath(account)) != .missing {
            throw AccountdError(
                .accountMoved,
                "account \(account)'s handoff from this host\(record.map { " (recorded at \($0.at))" } ?? "") did not finish: the record is written "
                    + "and its file is still here (\(root.accountPath(account))), so this host refuses the account, and a pull never replaces a file. "
                    + "Finish the handoff by running 'accountctl remove \(account) --handoff' again (then pull it on the new host). Nothing was changed",
                account: account.rawValue, file: root.handoffPath(account))
        }
        // The same store however it is spelled (``ReplicaAddress/storeIdentity(_:)``): a trailing
        // slash, `localhost`, another parameter order must not open the fence.
        if let handedTo = record?.replica, !HandoffMark.sameReplica(handedTo, replica.base) { return }
        let when = record.map { " at \($0.at)" } ?? ""
        throw AccountdError(
            .accountMoved,
            "account \(account) was handed off from this host\(when) to the replica \(replica.redacted); pulling it from there would bring back this host's own copy as it was at the handoff, "
                + "while the host that pulled it serves the account. Pull the new owner's copy with 'accountctl pull \(account) --replica URL' (its replica), "
                + "or take this host's copy back on purpose with 'accountctl restore \(account) --reclaim' (its before-remove snapshot); then two hosts may hold diverging copies. Nothing was changed",
            account: account.rawValue, file: root.handoffPath(account))
    }
}
