import AccountdCore
import AccountdDaemon
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountd migrate`: brings accounts to the bundle's version without a running daemon.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate accounts directly on the data root, without serving.",
        discussion: """
            Each account is opened as a switch would open it: created if --create is given and it is missing,
            migrated (after a snapshot) if it is older than the bundle. Exit status 1 when any account failed. \
            With --create and replication on (the daemon's config file and ACCOUNTD_* environment, as the daemon \
            reads them, or --replica), an account with neither a file nor a snapshot here is first looked up in \
            the replica, as a switch does: refused when the replica holds it (or pulled, with \
            replication.litestream.onCreate: pull), refused when the replica cannot be asked.
            """)

    @Option(name: .long, help: "The data root.")
    var dataRoot: String

    @Option(name: .long, help: "The schema bundle folder.")
    var schema: String

    @Flag(name: .long, help: "Migrate every account under the data root.")
    var all = false

    @Flag(name: .long, help: "Create accounts that do not exist.")
    var create = false

    @Option(name: .long, help: "The daemon's config file, read with --create for its replication settings (default: the daemon's).")
    var config: String?

    @Option(name: .long, help: "With --create: the replica to ask before creating (default: replication.litestream.replica of the daemon's settings).")
    var replica: String?

    @Argument(help: "The accounts to migrate.")
    var accounts: [String] = []

    func validate() throws {
        if all == !accounts.isEmpty {
            throw ValidationError("name the accounts to migrate, or give --all")
        }
        for name in accounts {
            if let problem = AccountName.problem(in: name) { throw ValidationError("\(AccountName.quoted(name)): \(problem)") }
        }
        if let replica, let problem = ReplicaAddress.problem(in: replica) { throw ValidationError("--replica cannot be used: \(problem)") }
    }

    func run() async throws {
        signal(SIGXFSZ, SIG_IGN)  // past a file-size limit the write fails (and rolls back) instead of killing us
        let bundle: SchemaBundle
        let root: DataRoot
        do {
            bundle = try SchemaBundle.load(from: schema)
            root = try DataRoot(dataRoot)
        } catch {
            FileHandle.standardError.write(Data("accountd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let lock: DataRootLock
        do {
            lock = try DataRootLock(root: root.path)
        } catch {
            FileHandle.standardError.write(Data("accountd: \(error); use 'accountctl migrate' to migrate through the running daemon\n".utf8))
            throw ExitCode(1)
        }
        defer { _ = lock }
        // Run as root, what this run creates goes to the data root's owner: the daemon runs as that user.
        defer { Self.keepOwner(root) }
        let store = AccountStore(root: root, bundle: bundle)
        let guardian: OfflineCreationGuard?
        do {
            guardian = create ? try await creationGuard(root: root, store: store) : nil
        } catch {
            FileHandle.standardError.write(Data("accountd: \(error); without its replication settings, creating an account could hide the replica's copy, so nothing was created\n".utf8))
            throw ExitCode(1)
        }
        let names = all ? root.accountNames() : accounts.map { try! AccountName($0) }
        var failed = 0
        for name in names {
            do {
                if let guardian, let pulled = try await guardian.check(name) { print(pulled) }
                let outcome = try store.open(name, create: create) { step in
                    FileHandle.standardError.write(Data("\(name): step \(step.step)/\(step.of) \(step.name)\n".utf8))
                }
                let from = outcome.fromVersion.map { " from version \($0)" } ?? ""
                var timing = "total \(Self.ms(outcome.durationMs))"
                if let snapshot = outcome.snapshotMs { timing += ", snapshot \(Self.ms(snapshot))" }
                if let migration = outcome.migrationMs { timing += ", migration \(Self.ms(migration))" }
                print("\(name): \(outcome.action.rawValue)\(from), now at version \(outcome.version) (\(timing))")
            } catch {
                failed += 1
                FileHandle.standardError.write(Data("accountd: \(name): \(error)\n".utf8))
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }

    /// The guard for `--create` when replication is on: `--replica`, else the daemon's own
    /// settings (its config file and environment, read as `accountd serve` reads them); nil
    /// when replication is off.
    ///
    /// - Throws: when the daemon's settings cannot be read.
    private func creationGuard(root: DataRoot, store: AccountStore) async throws -> OfflineCreationGuard? {
        let loaded = try await SettingsLoader(flags: .init(config: config, dataRoot: dataRoot, schema: schema)).load().replication
        guard let base = replica ?? loaded?.replica.base else { return nil }
        let settings = loaded ?? ReplicationSettings(replica: ReplicaURL(base: base), configPath: root.path + "/litestream.yml")
        return OfflineCreationGuard(
            root: root, store: store, replica: ReplicaURL(base: base),
            litestream: LitestreamProgram(executable: settings.program, timeout: .seconds(settings.commandTimeoutSeconds)),
            onCreate: settings.onCreate)
    }

    /// ``DataRoot/keepOwner()``, its failure said on standard error.
    static func keepOwner(_ root: DataRoot) {
        do { try root.keepOwner() } catch {
            FileHandle.standardError.write(Data("accountd: \(error); give the data root's files back to its owner (chown -R) before starting the daemon\n".utf8))
        }
    }

    private static func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
}
