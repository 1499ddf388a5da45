import AccountdClient
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountctl restore ACCOUNT [SNAPSHOT]`: put a snapshot back as the account's file;
/// `accountctl restore ACCOUNT --at TIME`: the account as its Litestream replica had it then.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Replace an account's file with one of its snapshots.",
        discussion: """
            Without SNAPSHOT, the newest snapshot the bundle can open is restored (a too-new one \
            is refused, naming the one to use). The current file is saved \
            as a snapshot first, so a restore can itself be undone; the snapshot being \
            restored is kept. A removed account (`accountctl remove`, without --purge) \
            is brought back this way. List the snapshots with `accountctl snapshots \
            ACCOUNT`. Needs an admin peer.

            With --at TIME (RFC 3339, e.g. 2026-01-31T09:30:00Z, or how long ago: 90s, \
            10m, 2h, 3d), the account comes back as its Litestream replica had it at that \
            time, through the same path (the current file saved as a snapshot first). The \
            reply says the time the restored state really has; a time before the replica's \
            history is refused with the earliest time there is, and nothing changes.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The account to restore.")
    var account: String

    @Argument(help: "The snapshot to restore, as `snapshots` lists it; the newest the bundle can open if left out.")
    var snapshot: String?

    @Option(name: .customLong("at"), help: "Restore from the replica as it was at this time: RFC 3339, or how long ago (10m, 2h).")
    var at: String?

    @Flag(help: "Restore an account handed off from this host all the same, ending the handoff (two hosts may then hold diverging copies).")
    var reclaim = false

    func validate() throws {
        try validateAccountName(account)
        if snapshot?.isEmpty == true { throw ValidationError("the snapshot name is empty") }
        if let at {
            if snapshot != nil { throw ValidationError("give either a SNAPSHOT or --at TIME, not both") }
            guard Self.time(at, now: Date()) != nil else {
                if let why = ReplicaTime.impossibility(in: at) { throw ValidationError("--at '\(at)': \(why); nothing was restored") }
                throw ValidationError("--at '\(at)' is neither an RFC 3339 time (2026-01-31T09:30:00Z) nor how long ago (90s, 10m, 2h, 3d)")
            }
        }
    }

    /// `text` as a time: RFC 3339 as it is, or `<number><s|m|h|d>` before `now`, in UTC.
    static func time(_ text: String, now: Date) -> ReplicaTime? {
        if let time = ReplicaTime(text) { return time }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let amount = Double(text.dropLast()), amount.isFinite, amount >= 0 else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return ReplicaTime(formatter.string(from: now.addingTimeInterval(-amount * unit)))
    }

    func run() async throws {
        if let at, let time = Self.time(at, now: Date()) {
            let reply = try await global.connect().restore(account: account, at: time, reclaim: reclaim)
            if global.json { return Output.json(reply.parameters) }
            print(
                "Restored \(reply.account) from the replica as it was at \(reply.at ?? "an unknown time") (asked: \(time.text); "
                    + "version \(reply.restored.version), \(Output.size(reply.restored.sizeBytes))).")
            return try report(reply)
        }
        let reply = try await global.connect().restore(account: account, snapshot: snapshot, reclaim: reclaim)
        if global.json { return Output.json(reply.parameters) }
        let restored = reply.restored
        print(
            "Restored \(reply.account) from snapshot "
                + "\(restored.snapshot) (version \(restored.version), "
                + "taken \(restored.createdAt), \(Output.size(restored.sizeBytes)))."
        )
        if let saved = reply.saved {
            print("The file it replaced was saved as snapshot \(saved.snapshot).")
        }
        try report(reply, savedToo: false)
    }

    /// The saved snapshot (unless already said) and how an active account was reopened.
    private func report(_ reply: RestoreReply, savedToo: Bool = true) throws {
        if savedToo, let saved = reply.saved {
            print("The file it replaced was saved as snapshot \(saved.snapshot).")
        }
        guard let reopened = reply.reopened else { return }
        if reopened.failed {
            print("The account is active, and its restored file could not be brought to the bundle; it stays at version \(reopened.version):")
            print("  " + (reopened.problem ?? "no reason given"))
            throw ClientError.failed("account \(reply.account) was restored but not reopened; 'accountctl status' shows the daemon's state")
        }
        print("The account is active and was \(reopened.action) again at version \(reopened.version).")
    }
}
