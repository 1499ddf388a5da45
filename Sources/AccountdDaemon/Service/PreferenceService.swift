import AccountdCore
import AccountdProtocol
import Foundation
import Synchronization

/// The key-value namespaces: which scope each lives in, and the open databases.
///
/// `device` values live in `device.sqlite`, `account` values in each account's own
/// file (at most ``openAccountLimit`` account files are kept open, least recently used
/// first out), and `memory` values only here.
///
/// An account's file is used only when the current bundle may use it as it is (see
/// ``AccountStore/usableState(_:)``): current, outdated or newer but readable. A missing,
/// corrupt, foreign, misbound or too-new file is refused and left exactly as it was.
final class PreferenceService: Sendable {
    static let openAccountLimit = 8

    /// An account's open preference table, and the bundle version it was allowed under.
    private struct OpenAccount {
        var database: PreferenceDatabase
        /// The target of the bundle whose store allowed the file; a reload to another target
        /// checks the file again before it is used.
        var target: Int
        var used: UInt64
    }

    let namespaces: [String: PreferenceScope]
    private let root: DataRoot
    private let hub: EventHub
    private let groupCommit: Bool
    /// Where the tables' commits run: the daemon's blocking pool.
    private let pool: BlockingPool
    /// The timer that ends a table's gathering of writers: an event loop's.
    private let schedule: PreferenceDatabase.Schedule
    private let metrics: DaemonMetrics
    /// `device.sqlite`'s table: nil without device namespaces, or while it is held back
    /// (``deviceHeldBack``) until the replica could be asked.
    private let device = Mutex<PreferenceDatabase?>(nil)
    /// Whether any namespace is device-wide.
    private let hasDevice: Bool
    /// Set while `device.sqlite` is missing and the replica could not be asked whether it
    /// holds one: device namespaces are refused, and no empty file is made that Litestream
    /// would push over the replica's copy (``DeviceRecovery``).
    private let deviceHeldBack = Atomic<Bool>(false)
    /// The `memory` namespaces' values.
    let memory = MemoryPreferences()
    /// The connections `Query` and `Execute` keep open to account files: closed with an
    /// account's preference table, before its file is migrated, restored or removed.
    let sqlConnections = SQLConnectionCache()
    private let accounts = Mutex<[AccountName: OpenAccount]>([:])
    /// Tables let go to keep at most ``openAccountLimit`` open, until their close ends:
    /// ``close(_:)`` of their account waits for them too.
    private let evicted = Mutex<[AccountName: [PreferenceDatabase]]>([:])
    private let clock = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - metrics: where the tables' commits are counted.
    ///   - holdDeviceBack: `device.sqlite` is missing and the replica could not be asked:
    ///     it is not made now, and device namespaces are refused until ``openDevice()``.
    /// - Throws: `storage` when `device.sqlite`, its `-wal` or its `-shm` is a link
    ///   (``DataRoot/refuseLinkedDeviceFile()``: the daemon does not start), or cannot be opened.
    init(
        declarations: [NamespaceDeclaration], root: DataRoot, hub: EventHub, groupCommit: Bool, pool: BlockingPool, metrics: DaemonMetrics,
        holdDeviceBack: Bool = false
    ) throws {
        namespaces = Dictionary(declarations.map { ($0.name, $0.scope) }, uniquingKeysWith: { a, _ in a })
        self.root = root
        self.hub = hub
        self.groupCommit = groupCommit
        self.pool = pool
        schedule = { delay, work in pool.schedule(after: delay, work) }
        self.metrics = metrics
        hasDevice = declarations.contains { $0.scope == .device }
        // SQLite opens device.sqlite and its -wal and -shm by path: none may be a link.
        if hasDevice { try root.refuseLinkedDeviceFile() }
        if hasDevice && holdDeviceBack {
            deviceHeldBack.store(true, ordering: .relaxed)
        } else if hasDevice {
            try openDevice()
        }
    }

    /// Whether device namespaces are held back, waiting for the replica (``DeviceRecovery``).
    var isDeviceHeldBack: Bool { deviceHeldBack.load(ordering: .relaxed) }

    /// Opens (making it if missing) `device.sqlite`'s table, once it may be: at start, or once
    /// the replica could be asked (``DeviceRecovery``). Blocking; nothing without device namespaces.
    ///
    /// - Throws: `storage` when it is a link or cannot be opened.
    func openDevice() throws {
        guard hasDevice, device.withLock({ $0 == nil }) else { return }
        try root.refuseLinkedDeviceFile()
        let opened = try PreferenceDatabase(
            path: root.devicePath, table: "prefs", groupCommit: groupCommit, create: true, run: pool.submit, schedule: schedule,
            observer: metrics.commitObserver(scope: "device"))
        device.withLock { $0 = opened }
        deviceHeldBack.store(false, ordering: .relaxed)
    }

    /// The scope of `namespace`, or `NamespaceNotFound`.
    func scope(of namespace: String) throws(ProtocolError) -> PreferenceScope {
        guard let scope = namespaces[namespace] else {
            let known = namespaces.keys.sorted().joined(separator: ", ")
            throw ProtocolError(
                .namespaceNotFound, "no namespace '\(namespace.prefix(64))'; the configured ones are \(known.isEmpty ? "none" : known)",
                facts: [("namespace", .string(String(namespace.prefix(128))))])
        }
        return scope
    }

    // MARK: - Databases

    var deviceDatabase: PreferenceDatabase {
        get throws(ProtocolError) {
            guard hasDevice else { throw ProtocolError(.namespaceNotFound, "no device namespaces are configured") }
            guard let opened = device.withLock({ $0 }) else {
                throw ProtocolError(
                    .internalError,
                    "device.sqlite is missing and the replica could not be asked at start whether it holds it; device namespaces are refused until it can "
                        + "(retried every \(Int(DeviceRecovery.retrySeconds)) s; see the log), so that no empty device.sqlite replaces the replica's. Check the replica's store and credentials")
            }
            return opened
        }
    }

    /// The preference table of `account` if it is open already and was allowed under the
    /// bundle of `store`; never blocks.
    func openAccountDatabase(_ account: AccountName, store: AccountStore) -> PreferenceDatabase? {
        let tick = clock.add(1, ordering: .relaxed).newValue
        let target = store.targetVersion
        return accounts.withLock { entries in
            // One look-up of the account (a Set on the event loop asks this every time).
            guard let index = entries.index(forKey: account), entries.values[index].target == target else { return nil }
            entries.values[index].used = tick
            return entries.values[index].database
        }
    }

    /// The preference table of `account`, opened if needed, once `store` has found the file
    /// usable. Blocking: call from a pool thread, holding the account (``AccountStore/hold(_:)``).
    ///
    /// Opening reads the table and writes nothing; a file without the table gets it with
    /// its first Set.
    ///
    /// - Throws: ``AccountdError``: `accountNotFound`, `accountCorrupt`, `accountTooNew` or
    ///   `accountBusy` as ``AccountStore/usableState(_:)`` decides, or `storage`.
    func accountDatabase(_ account: AccountName, store: AccountStore, holding hold: AccountHold) throws -> PreferenceDatabase {
        if let open = openAccountDatabase(account, store: store) { return open }
        // Under the account's lock: a switch or restore of this account finishes first.
        return try store.withAccount(account, holding: hold) { try openAccountDatabaseLocked(account, store: store) }
    }

    private func openAccountDatabaseLocked(_ account: AccountName, store: AccountStore) throws -> PreferenceDatabase {
        do {
            _ = try store.usableState(account)
        } catch {
            // A table opened under another bundle, for a file this one refuses, goes, its
            // accepted writes committed first.
            if let refused = accounts.withLock({ $0.removeValue(forKey: account)?.database }) { evict(refused, of: account) }
            sqlConnections.close(account)
            throw error
        }
        let tick = clock.add(1, ordering: .relaxed).newValue
        let target = store.targetVersion
        if let checked = accounts.withLock({ entries -> PreferenceDatabase? in
            entries[account]?.target = target
            entries[account]?.used = tick
            return entries[account]?.database
        }) {
            return checked
        }
        let database = try PreferenceDatabase(
            path: root.accountPath(account), table: "accountd_prefs", groupCommit: groupCommit, create: false, run: pool.submit, schedule: schedule,
            observer: metrics.commitObserver(scope: "account"), account: account, busy: store.options.lockTimeout)
        var letGo: [(AccountName, PreferenceDatabase)] = []
        let winner = accounts.withLock { entries -> PreferenceDatabase in
            if let raced = entries[account] { return raced.database }
            entries[account] = OpenAccount(database: database, target: target, used: tick)
            while entries.count > Self.openAccountLimit, let oldest = entries.min(by: { $0.value.used < $1.value.used }) {
                letGo.append((oldest.key, oldest.value.database))
                entries[oldest.key] = nil
            }
            return database
        }
        // Never written to: it has nothing to commit, and nobody else has it.
        if winner !== database { database.closeHere() }
        for (name, old) in letGo { evict(old, of: name) }
        return winner
    }

    /// Closes a table let go, on this pool thread unless a commit of it runs on another;
    /// then without waiting for it, and until its close ends, ``close(_:)`` of its account
    /// waits for it.
    private func evict(_ database: PreferenceDatabase, of account: AccountName) {
        evicted.withLock { $0[account, default: []].append(database) }
        database.closeHere { [self] in
            evicted.withLock { closing in
                closing[account]?.removeAll { $0 === database }
                if closing[account]?.isEmpty == true { closing[account] = nil }
            }
        }
    }

    /// Closes the account's preference table, once its accepted writes are committed, and
    /// the `Query` and `Execute` connections to its file, before the file is migrated or replaced.
    func close(_ account: AccountName) async {
        let database = accounts.withLock { $0.removeValue(forKey: account)?.database }
        await database?.close()
        for old in evicted.withLock({ $0[account] ?? [] }) { await old.close() }
        // A trip to the pool only when there are connections to close (a switch has mostly none).
        let idle = sqlConnections.release(account)
        guard !idle.isEmpty else { return }
        let close: @Sendable () -> Void = { for connection in idle { connection.close() } }
        do { try await pool.run(close) } catch { pool.submit(close) }  // a pool that has stopped runs it where `submit` says
    }

    /// Closes everything, checkpointing the WAL files; before the pool stops.
    func closeAll() async {
        let all = accounts.withLock { entries in
            defer { entries.removeAll() }
            return entries.values.map(\.database)
        }
        for database in all + evicted.withLock({ $0.values.flatMap { $0 } }) { await database.close() }
        let sqlConnections = sqlConnections
        _ = try? await pool.run { sqlConnections.closeAll() }
        await device.withLock({ $0 })?.close()
    }

    /// Tells watchers that `key` in `namespace` was set to `value`, or deleted (nil).
    func publishChange(_ namespace: String, _ key: String, scope: PreferenceScope, account: AccountName?, value: JSONValue?) {
        hub.publish(
            .watched(
                .changed(
                    .init(
                        namespace: namespace, key: key, scope: scope.rawValue, account: account?.rawValue, value: value ?? .null,
                        deleted: value == nil))))
    }
}
