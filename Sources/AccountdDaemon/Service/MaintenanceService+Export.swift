import AccountdCore
import AccountdProtocol

extension MaintenanceService {
    /// Exports `account` through `stream`, a piece of about 256 KiB per pool job (``ExportRun``),
    /// each within the caller's share of the pool (``UidShares``); between pieces no thread is
    /// held, and the export keeps its read transaction (or its staged copy). The account's lock
    /// is held while its file is found, not while the data streams. `allowed` is asked before
    /// each piece, so a grant revoked by a reload stops an export already running.
    ///
    /// A `sqlite` export takes a place among the staged copies first (``StagedExports``); the
    /// copy is removed, and the place given back, when the export ends however it ends: done,
    /// failed, its client gone, or stalled past `limits.streamStallSeconds`.
    ///
    /// - Throws: `AccountNotFound`, `AccountBusy` (the account's lock, or too many staged
    ///   copies), a storage error, ``ClientGone``, ``StreamStalled``, `PermissionDenied`.
    func export(
        _ account: AccountName, format: ExportFormat, uid: UInt32, to stream: ReplyStream, shares: UidShares,
        allowed: @escaping @Sendable () throws -> Void
    ) async throws -> ExportSummary {
        let slot = format == .sqlite ? try staged.take(for: uid, account: account) : nil
        defer { slot?.release() }
        let store = stores.current
        let exporter = try await store.withHold(account) { hold in try await pool.run { try store.exporter(account, holding: hold) } }
        let run = try await shares.run(uid) { [pool] in try await pool.run { try exporter.start(format) } }
        let summary = Box()
        do {
            try await stream.pump("the \(format.rawValue) Export of account \(account)") {
                try allowed()
                return try await shares.run(uid) { [pool] in
                    try await pool.run {
                        var sink = ReplySink()
                        let done = try run.produce(into: &sink)
                        summary.value = done
                        return ReplyStream.Piece(bytes: sink.buffer, done: done != nil)
                    }
                }
            }
        } catch {
            await close(run)
            throw error
        }
        await close(run)
        guard let done = summary.value else {
            throw AccountdError(.storage, "the export of account \(account) ended without its totals", account: account.rawValue)
        }
        return done
    }

    /// Ends `run` on a pool thread (or here, once the pool has stopped): its read transaction
    /// is released and its staged copy removed.
    private func close(_ run: ExportRun) async {
        do {
            try await pool.run { run.close() }
        } catch {
            run.close()
        }
    }
}

/// The summary an export's last piece made, handed from its pool job to the request's task
/// (which awaits the job, so the two never touch it at once).
private final class Box: @unchecked Sendable {
    var value: ExportSummary?
}
