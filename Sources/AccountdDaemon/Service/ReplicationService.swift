import AccountdCore
import AccountdProtocol
import Foundation
import Logging
import NIOCore

/// Replication with Litestream, as the daemon takes part in it: it writes Litestream's
/// configuration, lets Litestream sync an account a last time before its file goes,
/// reports each account's replication, and pulls accounts from the replica.
///
/// Litestream itself runs beside the daemon (`accountd-litestream.service`); nothing here
/// starts or stops it.
struct ReplicationService: Sendable {
    /// The settings in force; nil when replication is off. A reload replaces them.
    let settings: Reloadable<ReplicationSettings?>
    let root: DataRoot
    let logger: Logger
    /// Litestream's status, shared by every `Replication` caller.
    let statusCache: LitestreamStatusCache
    /// The `litestream` children running for this daemon (pulls, restores, looks at the
    /// replica), which shutdown stops at once (``stopLitestream()``).
    let runs: LitestreamRuns
    /// The last upload of each account Litestream reported: the lag while it does not answer.
    let uploads = UploadMemory()

    init(
        settings: ReplicationSettings?, root: DataRoot, logger: Logger, statusCache: LitestreamStatusCache = LitestreamStatusCache(),
        runs: LitestreamRuns = LitestreamRuns()
    ) {
        self.settings = Reloadable(settings)
        self.root = root
        self.logger = logger
        self.statusCache = statusCache
        self.runs = runs
    }

    /// At shutdown: kills every `litestream` child in progress (its operation fails, changing
    /// nothing) and refuses new ones, so that a store that does not answer cannot hold the
    /// daemon's stop.
    func stopLitestream() {
        runs.stopAll()
    }

    /// Replication off, for tests and tools that build the daemon's parts by hand.
    static func off(root: DataRoot, logger: Logger) -> ReplicationService {
        ReplicationService(settings: nil, root: root, logger: logger)
    }

    /// Takes `new` in force and writes Litestream's configuration for it (at start and on reload).
    ///
    /// - Throws: when the configuration cannot be written; the settings in force are then unchanged.
    func apply(_ new: ReplicationSettings?) throws {
        if let new {
            try LitestreamConfig(settings: new, root: root).write()
            logger.notice(
                "replication: Litestream configuration written to \(new.configPath); accounts replicate to \(new.replica.redacted) every \(LitestreamConfig.duration(new.syncIntervalSeconds))")
        }
        settings.replace(new)
    }

    /// How long Litestream has to answer each request of the final sync before a removal
    /// (the sync, then letting the file go). A Litestream that takes the request and never
    /// answers fails the removal within this, with nothing changed.
    static let finalSyncTimeout: TimeAmount = .seconds(5)

    /// Before the daemon removes `account`'s file: Litestream syncs it a last time and lets
    /// it go, so the replica holds the account's final state and a file created later under
    /// the same name is picked up afresh. Asked on an event loop, each request within
    /// ``finalSyncTimeout``: no thread waits for Litestream.
    ///
    /// Without replication or with Litestream not running (logged), or without a regular file
    /// of the account (the removal then refuses it, or purges what is left), there is nothing to do.
    ///
    /// - Throws: ``AccountdError`` (`storage`) when Litestream runs and refuses, or does not
    ///   answer in time; the removal then stops with nothing changed.
    ///
    /// With `handoff` (a move to another host), the final sync must happen: without
    /// replication, without Litestream, or when Litestream does not replicate the account,
    /// it throws (`storage`) instead of going on.
    func release(_ account: AccountName, handoff: Bool = false) async throws {
        guard let current = settings.current else {
            if handoff { throw Self.noHandoff(account, "this daemon runs without replication (replication.litestream.replica is not set)") }
            return
        }
        let control = LitestreamControl(socketPath: current.controlSocketPath)
        if handoff { try refuseHandoffThatCannotSync(account) }
        guard control.isPresent else {
            logger.warning(
                "replication: Litestream is not running (no \(current.controlSocketPath)); account \(account) goes without a final sync, and its replica keeps what was last synced",
                metadata: ["account": "\(account)"])
            return
        }
        try await finalSync(account, control: control, handoff: handoff)
    }

    /// Refuses (`storage`) a handoff whose final sync cannot happen: replication off,
    /// Litestream not running, or running for a replica a reload replaced. Checked before the
    /// handoff is recorded (nothing is written then) and again at the final sync.
    func refuseHandoffThatCannotSync(_ account: AccountName) throws {
        guard let current = settings.current else {
            throw Self.noHandoff(account, "this daemon runs without replication (replication.litestream.replica is not set)")
        }
        guard LitestreamControl(socketPath: current.controlSocketPath).isPresent else {
            throw Self.noHandoff(account, "Litestream is not running (no \(current.controlSocketPath)); start accountd-litestream")
        }
        if let running = LitestreamStateReset(root: root).recordedStore(), running != ReplicaAddress.storeIdentity(current.replica.base) {
            // A reload changed the replica, and Litestream, which reads its configuration only
            // when it starts, still ships to the one `accountd prepare-litestream` recorded:
            // the final sync would reach the old replica, not the one the handoff names.
            throw Self.noHandoff(
                account,
                "Litestream still runs with the replica it was started for, and the configuration names another since a reload; "
                    + "restart it first ('systemctl restart accountd-litestream', step 3 of changing the replica in docs/REPLICATION.md), then hand off again")
        }
    }

    /// Litestream's final sync of `account` and its letting the file go (``release(_:handoff:)``).
    private func finalSync(_ account: AccountName, control: LitestreamControl, handoff: Bool) async throws {
        let path = root.accountPath(account)
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        do {
            if try await !control.syncAndWait(path, within: Self.finalSyncTimeout) {
                if handoff {
                    throw Self.noHandoff(account, "Litestream does not replicate it (yet): it was created moments ago, or replication of it was stopped; try again in a few seconds")
                }
                logger.warning(
                    "replication: Litestream does not replicate account \(account) (created moments ago, or stopped); it goes without a final sync",
                    metadata: ["account": "\(account)"])
            }
            try await control.unregister(path, within: Self.finalSyncTimeout)
        } catch let error as AccountdError {
            throw error
        } catch let failure as LitestreamControl.Failure where failure.timedOut {
            throw AccountdError(
                .storage,
                "Litestream did not answer within \(LitestreamExchange.seconds(Self.finalSyncTimeout)) s when asked to sync account \(account) a last time; "
                    + "the account was not removed and nothing was changed. Is accountd-litestream running? Check it "
                    + "('systemctl status accountd-litestream'), or stop it to remove without a final sync",
                account: account.rawValue, file: path)
        } catch {
            throw AccountdError(
                .storage,
                "Litestream could not sync account \(account) a last time before its removal (\(error)); nothing was removed. Check accountd-litestream, or stop it to remove without a final sync",
                account: account.rawValue, file: path)
        }
    }

    /// Each account's replication, from Litestream's control socket, through the shared
    /// look-up (``LitestreamStatusCache``): never more than one exchange with Litestream at a
    /// time, none on a pool thread, and an answer within its timeout whatever Litestream does.
    ///
    /// When Litestream is not running (no socket, or nothing listening on it), every account
    /// is `not-replicated`; when it runs but does not answer in time (or fails), `litestream`
    /// is false and every account's status is `unknown`. Either way each account's
    /// `secondsBehind` is the time since its last upload Litestream reported to this daemon
    /// (or since the daemon started): it grows while nothing is shipped (``UploadMemory``).
    ///
    /// With `deviceHeldBack` (`device.sqlite` missing, the replica not yet answering whether
    /// it holds one: ``DeviceRecovery``), the device's entry is `missing`, whatever Litestream says.
    func status(accounts: [AccountName], deviceHeldBack: Bool = false, now: Date = Date()) async -> ReplicationReply {
        let heldBack = ReplicationAccount(
            account: Self.deviceName, replicated: false, status: ReplicationAccount.missingStatus, lastSyncAt: nil, secondsBehind: nil)
        guard let current = settings.current else {
            return ReplicationReply(enabled: false, replica: nil, litestream: false, accounts: accounts.map {
                ReplicationAccount(account: $0.rawValue, replicated: false, status: "not-replicated", lastSyncAt: nil, secondsBehind: nil)
            })
        }
        let replica = current.replica.redacted
        // Litestream down or silent: each account's lag is the time since its last upload seen
        // here, growing; never none.
        let unseen = { [uploads, root] (account: AccountName) -> Double in
            uploads.secondsSinceUpload((root.accountPath(account) as NSString).standardizingPath, now: now)
        }
        guard LitestreamControl(socketPath: current.controlSocketPath).isPresent else {
            return ReplicationReply(
                enabled: true, replica: replica, litestream: false,
                accounts: accounts.map {
                    ReplicationAccount(account: $0.rawValue, replicated: false, status: "not-replicated", lastSyncAt: nil, secondsBehind: unseen($0))
                }, device: deviceHeldBack ? heldBack : nil, lagThresholdSeconds: Self.lagThreshold(syncIntervalSeconds: current.syncIntervalSeconds))
        }
        let logger = logger
        let lookup = await statusCache.lookup(socketPath: current.controlSocketPath) { failure in
            logger.warning(
                "replication: \(failure)\(failure.notRunning ? "" : "; Replication reports every account's status as unknown meanwhile")")
        }
        let databases: [LitestreamControl.Database]
        switch lookup.result {
        case .success(let listed):
            databases = listed
        case .failure(let failure):
            // Not running: nothing replicates. Running but not answering: nobody knows.
            let status = failure.notRunning ? "not-replicated" : "unknown"
            return ReplicationReply(
                enabled: true, replica: replica, litestream: false,
                accounts: accounts.map {
                    ReplicationAccount(account: $0.rawValue, replicated: false, status: status, lastSyncAt: nil, secondsBehind: unseen($0))
                }, device: deviceHeldBack ? heldBack : nil, lagThresholdSeconds: Self.lagThreshold(syncIntervalSeconds: current.syncIntervalSeconds))
        }
        // Litestream names each database by its cleaned absolute path.
        var known: [String: LitestreamControl.Database] = [:]
        for database in databases { known[(database.path as NSString).standardizingPath] = database }
        uploads.remember(known.compactMapValues(\.lastSyncAt), listed: known.keys)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let threshold = Self.lagThreshold(syncIntervalSeconds: current.syncIntervalSeconds)
        func entry(_ name: String, path: String) -> ReplicationAccount {
            guard let database = known[(path as NSString).standardizingPath] else {
                return ReplicationAccount(account: name, replicated: false, status: "not-replicated", lastSyncAt: nil, secondsBehind: nil)
            }
            // Litestream moves last_sync_at only when a sync succeeded: with nothing new, at
            // every sync; with changes waiting, once the store took them. So the time since it
            // is the real lag, and a store that takes no uploads shows as it grows.
            // A file never uploaded (no last_sync_at) has its changes waiting since at least
            // its newest write as first seen here: that age is its lag (a store that has
            // taken nothing of it), growing while Litestream's retries touch the file.
            let behind =
                database.lastSyncAt.map { max(0, now.timeIntervalSince($0)) }
                ?? uploads.secondsWaiting((path as NSString).standardizingPath, newestChange: Self.newestChange(path), now: now)
            let lagging = database.status == "replicating" && (behind ?? 0) > threshold
            return ReplicationAccount(
                account: name, replicated: database.status == "replicating",
                status: lagging ? ReplicationAccount.behindStatus : database.status,
                lastSyncAt: database.lastSyncAt.map(formatter.string), secondsBehind: behind)
        }
        let entries = accounts.map { entry($0.rawValue, path: root.accountPath($0)) }
        // device.sqlite replicates beside the accounts: its lag counts too (a device-wide Set
        // waiting for a frozen store is as much at risk as an account's).
        let device =
            deviceHeldBack ? heldBack : FileManager.default.fileExists(atPath: root.devicePath) ? entry(Self.deviceName, path: root.devicePath) : nil
        // Between a reload that changed the replica and Litestream's restart, Litestream's
        // uploads still go to the store it was started for (hostile33f #5).
        let running = LitestreamStateReset(root: root).recordedStore()
        let stale = running.flatMap { $0 == ReplicaAddress.storeIdentity(current.replica.base) ? nil : $0 }
        return ReplicationReply(
            enabled: true, replica: replica, litestream: true, accounts: entries, device: device, lagThresholdSeconds: threshold,
            litestreamReplica: stale)
    }

    /// How `device.sqlite` is named in the `Replication` reply.
    static let deviceName = "device.sqlite"

    /// For an account Litestream replicates but has never uploaded: the time of its newest
    /// change (the newer modification time of its file and its WAL), a lower bound of how long
    /// its changes have waited; nil when neither can be read. Two `stat` calls, on the caller's thread.
    static func newestChange(_ path: String) -> Date? {
        var newest: Double?
        for file in [path, path + "-wal"] {
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            newest = max(newest ?? modified, modified)
        }
        return newest.map { Date(timeIntervalSince1970: $0) }
    }

    /// The replica's past states for `Restore {at}`, with the settings in force.
    ///
    /// - Throws: a `ProtocolError` (`InvalidRequest`) when replication is off.
    func timeTraveller() throws -> ReplicaTimeTravel {
        guard let current = settings.current else {
            throw ProtocolError(
                .invalidRequest,
                "this daemon runs without replication (replication.litestream.replica is not set), so there is no replica to restore from; restore a snapshot instead")
        }
        return ReplicaTimeTravel(root: root, replica: current.replica, litestream: current.litestream(runs: runs))
    }

    /// How far behind an account may be before it is `behind`: Litestream reads the WAL every
    /// second and ships every `syncIntervalSeconds`, so a healthy account is at most about
    /// their sum behind; three sync intervals and two seconds more, and at least 5 s.
    static func lagThreshold(syncIntervalSeconds: Double) -> Double {
        max(5, 3 * syncIntervalSeconds + 2)
    }

    /// The refusal of a handoff whose final sync cannot happen; nothing was changed.
    static func noHandoff(_ account: AccountName, _ why: String) -> AccountdError {
        AccountdError(
            .storage, "account \(account) cannot be handed off: \(why). A handoff needs Litestream's final sync; nothing was changed",
            account: account.rawValue)
    }

    /// The replica the handoff of an account goes to, masked, for the record; nil when replication is off.
    var replicaForRecord: String? { settings.current?.replica.redacted }

    /// The puller for `Pull`, with the settings in force; `replica` (another base URL, the old
    /// host's for a move) in place of the configured one when given.
    ///
    /// - Throws: a `ProtocolError` (`InvalidRequest`) when replication is off.
    func puller(replica: String? = nil, reclaim: Bool = false) throws -> ReplicaPull {
        guard let current = settings.current else {
            throw ProtocolError(
                .invalidRequest, "this daemon runs without replication (replication.litestream.replica is not set), so there is no replica to pull from")
        }
        var puller = ReplicaPull(
            root: root, replica: replica.map { ReplicaURL(base: $0) } ?? current.replica, litestream: current.litestream(runs: runs))
        // A copy handed off from this host's own replica is refused unless reclaimed (HandoffMark).
        puller.home = current.replica.base
        puller.reclaim = reclaim
        return puller
    }
}
