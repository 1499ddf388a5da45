import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl replication`: each account's replication with Litestream.
struct ReplicationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replication",
        abstract: "Show, per account, whether Litestream replicates it and how far behind the replica is.",
        discussion: """
            From Litestream's own status (its control socket). BEHIND is the time since the \
            replica last caught up with the account: at most the writes of that long are not \
            in the replica yet. An account the replica has not caught up with for longer than \
            a few sync intervals is `behind` (a store that takes no uploads), and the command \
            then fails (exit status 1); so is one never uploaded (LAST SYNC `never uploaded`) whose \
            newest change is older than that. The last row, device.sqlite, is the device-wide \
            preferences' file, which counts the same; while it is missing and held back (the replica \
            could not be asked whether it holds one) its STATUS is `missing` and the command fails. \
            With replication off it says so; with Litestream not \
            running or not answering it says so and fails (exit status 1).
            """)

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let reply = try await global.connect().replication()
        if global.json {
            Output.json(reply.parameters)
            // The same exit status as the table's, so that a script watching --json sees the lag too.
            if reply.behind > 0 || (reply.enabled && !reply.litestream) || reply.device?.status == ReplicationAccount.missingStatus
                || reply.litestreamReplica != nil
            {
                throw ExitCode(1)
            }
            return
        }
        guard reply.enabled, let replica = reply.replica else {
            print("Replication is off (set replication.litestream.replica in the daemon's config).")
            return
        }
        print("Replica: \(replica)")
        if !reply.litestream { print("Litestream is not answering on its control socket: is accountd-litestream running?") }
        // device.sqlite (device-wide preferences) replicates beside the accounts, on the last row.
        let rows = (reply.accounts + [reply.device].compactMap { $0 }).map { entry in
            [
                entry.account, entry.replicated ? "yes" : "no", entry.status,
                entry.secondsBehind.map { String(format: "%.1fs", $0) } ?? "-", entry.lastSyncAt ?? (entry.replicated ? "never uploaded" : "-"),
            ]
        }
        guard !rows.isEmpty else {
            print("No accounts.")
            if !reply.litestream { throw ClientError.failed("Litestream is not running or not answering: nothing is being replicated") }
            return
        }
        Table(headers: ["ACCOUNT", "REPLICATED", "STATUS", "BEHIND", "LAST SYNC"], rightAligned: [3], rows: rows).print()
        if let worst = reply.worstSecondsBehind { print(String(format: "Worst: %.1fs behind.", worst)) }
        if (reply.accounts + [reply.device].compactMap { $0 }).contains(where: { $0.replicated && $0.lastSyncAt == nil && ($0.secondsBehind ?? 0) > (reply.lagThresholdSeconds ?? 5) }) {
            print(
                "Never uploaded: see accountd-litestream's log ('journalctl -u accountd-litestream'). If the replica's URL changed, "
                    + "reload accountd and restart accountd-litestream: its start resets Litestream's local state for the new replica, "
                    + "which then gets a full copy of every database (docs/REPLICATION.md).")
        }
        if let running = reply.litestreamReplica {
            throw ClientError.failed(
                "Litestream still ships to \(running), the replica it was started for: the configuration names \(replica) since a reload. "
                    + "Restart accountd-litestream ('systemctl restart accountd-litestream'); until then the statuses above are of the old replica")
        }
        if reply.device?.status == ReplicationAccount.missingStatus {
            throw ClientError.failed(
                "device.sqlite is missing and held back: the replica could not be asked whether it holds one, so device namespaces are refused until it answers "
                    + "(asked again every 10 s; the daemon's log says why). Fix the replica's access, or its URL (reload accountd)")
        }
        if reply.behind > 0 {
            let threshold = reply.lagThresholdSeconds.map { String(format: "%.0f s", $0) } ?? "a few seconds"
            throw ClientError.failed(
                "\(reply.behind) account(s) have not reached the replica for more than \(threshold): check the replica's store and accountd-litestream's log")
        }
        if !reply.litestream {
            throw ClientError.failed("Litestream is not running or not answering: nothing is being replicated; start or restart accountd-litestream")
        }
    }
}
