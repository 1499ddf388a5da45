/// The reply to `Replication`: whether the daemon replicates with Litestream, where to,
/// and each account's replication as Litestream reports it.
public struct ReplicationReply: ReplyModel {
    enum Key: String { case enabled, replica, litestream, accounts, device, lagThresholdSeconds, worstSecondsBehind, behind, litestreamReplica }

    /// Whether `replication.litestream.replica` is set.
    public var enabled: Bool
    /// The base URL of the replica; nil when replication is off.
    public var replica: String?
    /// Whether Litestream's control socket answered; false when it is not running, or
    /// when replication is off.
    public var litestream: Bool
    /// Every account with a file here, by name.
    public var accounts: [ReplicationAccount]
    /// `device.sqlite` (the device-wide preferences), named `device.sqlite`, when replication
    /// is on and the file exists: its lag counts in ``worstSecondsBehind`` and ``behind`` like
    /// an account's.
    public var device: ReplicationAccount?
    /// How far behind (seconds since the replica last had everything) an account may be
    /// before its status is `behind`; nil when replication is off.
    public var lagThresholdSeconds: Double?
    /// The store Litestream was started for (as `accountd prepare-litestream` recorded it:
    /// no user name or password), when it is not ``replica``'s: a reload changed the replica
    /// and Litestream, which reads its configuration only when it starts, still ships there
    /// until it is restarted. Nil otherwise.
    public var litestreamReplica: String?

    /// The worst lag among the accounts and `device.sqlite`: the most seconds any of them has
    /// not reached the replica. Nil when none has a lag to report.
    public var worstSecondsBehind: Double? { (accounts + [device].compactMap { $0 }).compactMap(\.secondsBehind).max() }

    /// How many accounts (and `device.sqlite`) are `behind`: replicated by Litestream, yet not
    /// in the replica for longer than ``lagThresholdSeconds`` (a store that stopped accepting uploads).
    public var behind: Int { (accounts + [device].compactMap { $0 }).filter { $0.status == ReplicationAccount.behindStatus }.count }

    public init(
        enabled: Bool, replica: String?, litestream: Bool, accounts: [ReplicationAccount], device: ReplicationAccount? = nil,
        lagThresholdSeconds: Double? = nil, litestreamReplica: String? = nil
    ) {
        self.enabled = enabled
        self.replica = replica
        self.litestream = litestream
        self.accounts = accounts
        self.device = device
        self.lagThresholdSeconds = lagThresholdSeconds
        self.litestreamReplica = litestreamReplica
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Replication")
        enabled = try reader.bool(Key.enabled)
        replica = try reader.optionalString(Key.replica)
        litestream = try reader.bool(Key.litestream)
        accounts = try reader.array(Key.accounts, ReplicationAccount.init)
        device = try reader.optionalObject(Key.device, ReplicationAccount.init)
        lagThresholdSeconds = reader.has(Key.lagThresholdSeconds) ? try reader.double(Key.lagThresholdSeconds) : nil
        litestreamReplica = try reader.optionalString(Key.litestreamReplica)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.enabled, .bool(enabled))
        object.addIfPresent(Key.replica, replica.map { .string($0) })
        object.add(Key.litestream, .bool(litestream))
        object.add(Key.accounts, .array(accounts.map(\.parameters)))
        object.addIfPresent(Key.device, device?.parameters)
        object.addIfPresent(Key.lagThresholdSeconds, lagThresholdSeconds.map { .double($0) })
        object.addIfPresent(Key.worstSecondsBehind, worstSecondsBehind.map { .double(($0 * 1000).rounded() / 1000) })
        if enabled { object.add(Key.behind, .int(Int64(behind))) }
        object.addIfPresent(Key.litestreamReplica, litestreamReplica.map { .string($0) })
        return object.value
    }
}

/// One account in ``ReplicationReply``.
public struct ReplicationAccount: Hashable, Sendable {
    enum Key: String { case account, replicated, status, lastSyncAt, secondsBehind }

    /// The status of an account Litestream replicates whose replica has not caught up for
    /// longer than the threshold (accountd's word, in place of Litestream's `replicating`).
    public static let behindStatus = "behind"
    /// The status of `device.sqlite` while it is missing and held back: the replica could not
    /// be asked whether it holds one, so device namespaces are refused until it answers.
    public static let missingStatus = "missing"

    public var account: String
    /// Whether Litestream is replicating the account's file now.
    public var replicated: Bool
    /// Litestream's word for the file (`replicating`, `open`, `stopped`), or `not-replicated`
    /// when Litestream does not know the file.
    public var status: String
    /// When the replica last caught up with the file (RFC 3339), by Litestream's clock.
    public var lastSyncAt: String?
    /// Seconds since `lastSyncAt`: at most the account's writes of this many seconds are not in
    /// the replica yet. Nil when Litestream has not synced the file.
    public var secondsBehind: Double?

    public init(account: String, replicated: Bool, status: String, lastSyncAt: String?, secondsBehind: Double?) {
        self.account = account
        self.replicated = replicated
        self.status = status
        self.lastSyncAt = lastSyncAt
        self.secondsBehind = secondsBehind
    }

    init(_ reader: ReplyReader) throws(ReplyDecodingError) {
        account = try reader.string(Key.account)
        replicated = try reader.bool(Key.replicated)
        status = try reader.string(Key.status)
        lastSyncAt = try reader.optionalString(Key.lastSyncAt)
        secondsBehind = reader.has(Key.secondsBehind) ? try reader.double(Key.secondsBehind) : nil
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.replicated, .bool(replicated))
        object.add(Key.status, .string(status))
        object.addIfPresent(Key.lastSyncAt, lastSyncAt.map { .string($0) })
        object.addIfPresent(Key.secondsBehind, secondsBehind.map { .double(($0 * 1000).rounded() / 1000) })
        return object.value
    }
}
