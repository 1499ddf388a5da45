extension Command {
    /// Decodes a request's parameters into a command.
    ///
    /// The parameter names were checked by ``Request/decode(_:)``; this checks their
    /// values.
    ///
    /// - Throws: ``ProtocolError``: `InvalidParameter` (a wrong type, a missing or
    ///   contradictory parameter), `InvalidAccountName`, `InvalidValue` (`Set` without a value;
    ///   like `InvalidParameter`, it names the `parameter`).
    public init(_ request: Request) throws(ProtocolError) {
        let parameters = request.parameters
        switch request.method {
        case .info: self = .info
        case .ping: self = .ping
        case .watch: self = .watch
        case .metrics: self = .metrics
        case .replication: self = .replication
        case .pull:
            let replica = try parameters.string("replica")
            if let replica, replica.isEmpty || replica.utf8.count > 4096 {
                throw .invalidParameter("replica", "\"replica\" must be a base URL of at most 4096 bytes, e.g. s3://bucket/accountd/host-a")
            }
            if let replica, let problem = ReplicaAddress.problem(in: replica) {
                throw .invalidParameter("replica", "\"replica\" cannot be used: \(problem); nothing was changed")
            }
            self = .pull(account: try parameters.requiredAccount(), replica: replica, reclaim: try parameters.bool("reclaim") ?? false)
        case .importAccount:
            let path = try parameters.requiredString("path")
            guard path.hasPrefix("/"), path.utf8.count <= 4096, !path.utf8.contains(0) else {
                throw .invalidParameter("path", "\"path\" must be an absolute path (beginning with /) of at most 4096 bytes, read by the daemon")
            }
            self = .importAccount(
                account: try parameters.requiredAccount(), path: path, rebind: try parameters.bool("rebind") ?? false,
                overReplica: try parameters.bool("overReplica") ?? false)
        case .status: self = .status(account: try parameters.account())
        case .list: self = .list(details: try parameters.bool("details") ?? false)
        case .switchAccount:
            self = .switchAccount(account: try parameters.requiredAccount(), create: try parameters.bool("create") ?? true)
        case .migrate:
            self = .migrate(
                try Self.migrateTarget(parameters),
                rollout: try Self.migrateRollout(parameters))
        case .export:
            let name = try parameters.string("format") ?? ExportFormat.jsonl.rawValue
            guard let format = ExportFormat(rawValue: name) else {
                throw .invalidParameter("format", "format '\(name.prefix(32))' is not one of jsonl, sql, sqlite")
            }
            self = .export(account: try parameters.requiredAccount(), format: format)
        case .verify: self = .verify(account: try parameters.requiredAccount())
        case .plan: self = .plan(account: try parameters.requiredAccount())
        case .snapshots: self = .snapshots(account: try parameters.requiredAccount())
        case .restore:
            let account = try parameters.requiredAccount()
            let snapshot = try parameters.string("snapshot")
            var at: ReplicaTime?
            if let text = try parameters.string("at") {
                guard let time = ReplicaTime(text) else {
                    let why = ReplicaTime.impossibility(in: text).map { " (\($0))" } ?? ""
                    throw .invalidParameter("at", "at '\(text.prefix(40))' is not an RFC 3339 time\(why); give e.g. 2026-01-31T09:30:00Z")
                }
                guard snapshot == nil else {
                    throw .invalidParameter("at", "Restore takes either snapshot (a local snapshot) or at (a time in the replica), not both")
                }
                at = time
            }
            self = .restore(account: account, snapshot: snapshot, at: at, reclaim: try parameters.bool("reclaim") ?? false)
        case .snapshot:
            let account = try parameters.requiredAccount()
            var label = SnapshotLabel.manual
            if let raw = try parameters.string("label") { label = try SnapshotLabel(raw) }
            self = .snapshot(account: account, label: label)
        case .remove:
            let (purge, handoff) = (try parameters.bool("purge") ?? false, try parameters.bool("handoff") ?? false)
            if purge && handoff {
                throw .invalidParameter("handoff", "Remove takes \"purge\" or \"handoff\", not both: a handoff keeps the account for the host that pulls it")
            }
            self = .remove(account: try parameters.requiredAccount(), purge: purge, handoff: handoff)
        case .get: self = .get(try Self.preferenceKey(parameters))
        case .delete: self = .delete(try Self.preferenceKey(parameters))
        case .set:
            let key = try Self.preferenceKey(parameters)
            guard let value = parameters["value"] else {
                throw ProtocolError(.invalidValue, "Set needs a \"value\" (any JSON value)", facts: [("parameter", "value")])
            }
            self = .set(key, value: value)
        case .keys: self = .keys(namespace: try parameters.requiredString("namespace"), account: try parameters.account())
        case .query:
            self = .query(
                account: try parameters.account(), statement: try SQLStatement(sql: parameters["sql"], parameters: parameters["parameters"]),
                maxRows: try parameters.int("maxRows", in: 0...Int(Int32.max)), migrate: try parameters.bool("migrate") ?? true)
        case .execute:
            self = .execute(
                account: try parameters.account(), statements: try Self.statements(parameters), migrate: try parameters.bool("migrate") ?? true)
        }
    }

    /// The request that sends this command; parameters left at their defaults are left out.
    public func request(more: Bool = false) -> Request {
        var pairs: [(String, JSONValue)] = []
        func account(_ name: AccountName?) {
            if let name { pairs.append(("account", .string(name.rawValue))) }
        }
        func preference(_ target: PreferenceKey, value: JSONValue? = nil) {
            pairs.append(("namespace", .string(target.namespace)))
            pairs.append(("key", .string(target.key)))
            if let value { pairs.append(("value", value)) }
            account(target.account)
        }
        switch self {
        case .info, .ping, .watch, .metrics, .replication: break
        case .pull(let name, let replica, let reclaim):
            account(name)
            if let replica { pairs.append(("replica", .string(replica))) }
            if reclaim { pairs.append(("reclaim", true)) }
        case .importAccount(let name, let path, let rebind, let overReplica):
            account(name)
            pairs.append(("path", .string(path)))
            if rebind { pairs.append(("rebind", true)) }
            if overReplica { pairs.append(("overReplica", true)) }
        case .status(let name): account(name)
        case .list(let details): if details { pairs.append(("details", true)) }
        case .switchAccount(let name, let create):
            account(name)
            if !create { pairs.append(("create", false)) }
        case .migrate(let target, let rollout):
            switch target {
            case .all: pairs.append(("all", true))
            case .accounts(let names): pairs.append(("accounts", .array(names.map { .string($0.rawValue) })))
            }
            if let canary = rollout.canary { pairs.append(("canary", JSONValue(canary))) }
            if let maxFailures = rollout.maxFailures { pairs.append(("maxFailures", JSONValue(maxFailures))) }
            if rollout.create { pairs.append(("create", true)) }
            if !rollout.canaryAccounts.isEmpty { pairs.append(("canaryAccounts", .array(rollout.canaryAccounts.map { .string($0.rawValue) }))) }
            if !rollout.exclude.isEmpty { pairs.append(("exclude", .array(rollout.exclude.map { .string($0.rawValue) }))) }
            if let version = rollout.rollbackTo { pairs.append(("rollbackTo", JSONValue(version))) }
        case .export(let name, let format):
            account(name)
            pairs.append(("format", .string(format.rawValue)))
        case .verify(let name), .plan(let name), .snapshots(let name): account(name)
        case .restore(let name, let snapshot, let at, let reclaim):
            account(name)
            if let snapshot { pairs.append(("snapshot", .string(snapshot))) }
            if let at { pairs.append(("at", .string(at.text))) }
            if reclaim { pairs.append(("reclaim", true)) }
        case .snapshot(let name, let label):
            account(name)
            pairs.append(("label", .string(label.description)))
        case .remove(let name, let purge, let handoff):
            account(name)
            if purge { pairs.append(("purge", true)) }
            if handoff { pairs.append(("handoff", true)) }
        case .get(let target), .delete(let target): preference(target)
        case .set(let target, let value): preference(target, value: value)
        case .keys(let namespace, let name):
            pairs.append(("namespace", .string(namespace)))
            account(name)
        case .query(let name, let statement, let maxRows, let migrate):
            account(name)
            pairs.append(("sql", .string(statement.sql)))
            if let parameters = statement.parameters.json { pairs.append(("parameters", parameters)) }
            if let maxRows { pairs.append(("maxRows", JSONValue(maxRows))) }
            if !migrate { pairs.append(("migrate", false)) }
        case .execute(let name, let statements, let migrate):
            account(name)
            pairs.append(("statements", .array(statements.map(\.json))))
            if !migrate { pairs.append(("migrate", false)) }
        }
        return Request(method: method, parameters: Parameters(pairs), more: more)
    }

    private static func migrateTarget(_ parameters: Parameters) throws(ProtocolError) -> MigrateTarget {
        let all = try parameters.bool("all") ?? false
        let names = try parameters.stringArray("accounts") ?? []
        guard all != !names.isEmpty else {
            throw .invalidParameter("accounts", "Migrate takes either \"accounts\" (a non-empty list) or \"all\": true")
        }
        if all { return .all }
        var accounts: [AccountName] = []
        for name in names { accounts.append(try AccountName(requested: name)) }
        return .accounts(accounts)
    }

    /// `Migrate`'s staging: `canary`, `maxFailures`, `create`, `canaryAccounts`, `exclude`, `rollbackTo`.
    private static func migrateRollout(_ parameters: Parameters) throws(ProtocolError) -> MigrateRollout {
        func names(_ key: String) throws(ProtocolError) -> [AccountName] {
            var accounts: [AccountName] = []
            for name in try parameters.stringArray(key) ?? [] { accounts.append(try AccountName(requested: name)) }
            return accounts
        }
        let rollout = MigrateRollout(
            canary: try parameters.int("canary", in: 1...MigrateRollout.maximum),
            maxFailures: try parameters.int("maxFailures", in: 1...MigrateRollout.maximum), create: try parameters.bool("create") ?? false,
            canaryAccounts: try names("canaryAccounts"), exclude: try names("exclude"),
            rollbackTo: try parameters.int("rollbackTo", in: 0...Int(Int32.max)))
        // An empty canary would be no canary at all: the whole fleet at once, which the caller did not ask for.
        if try parameters.stringArray("canaryAccounts")?.isEmpty == true {
            throw .invalidParameter("canaryAccounts", "\"canaryAccounts\" is empty; name the canary's accounts, or leave it out for no canary")
        }
        if let left = rollout.canaryAccounts.first(where: { rollout.exclude.contains($0) }) {
            throw .invalidParameter("canaryAccounts", "account \(left) is both in \"canaryAccounts\" and in \"exclude\"; a canary of left-out accounts would stage nothing")
        }
        if rollout.canary != nil && !rollout.canaryAccounts.isEmpty {
            throw .invalidParameter("canaryAccounts", "Migrate takes either \"canary\" (a number) or \"canaryAccounts\" (names), not both")
        }
        if rollout.create && rollout.rollbackTo != nil {
            throw .invalidParameter("create", "a rollback (\"rollbackTo\") creates no account; leave \"create\" out")
        }
        return rollout
    }

    /// The most statements one `Execute` takes.
    public static let maximumStatements = 10_000

    /// `Execute`'s `statements`: a non-empty array of `{sql, parameters?}` objects.
    private static func statements(_ parameters: Parameters) throws(ProtocolError) -> [SQLStatement] {
        guard case .array(let items)? = parameters["statements"], !items.isEmpty, items.count <= maximumStatements else {
            throw .invalidParameter(
                "statements", "parameter 'statements' is required: an array of 1 to \(maximumStatements) objects {\"sql\": ..., \"parameters\": ...}")
        }
        var statements: [SQLStatement] = []
        for (index, item) in items.enumerated() {
            let path = "statements[\(index)]."
            guard case .object(let pairs) = item else {
                throw .invalidParameter("statements", "statements[\(index)] must be an object {\"sql\": ..., \"parameters\": ...}")
            }
            if let unknown = pairs.first(where: { $0.0 != "sql" && $0.0 != "parameters" }) {
                throw .invalidParameter("statements", "statements[\(index)] has an unknown key '\(unknown.0.prefix(64))'; a statement has sql and parameters")
            }
            statements.append(try SQLStatement(sql: item["sql"], parameters: item["parameters"], path: path))
        }
        return statements
    }

    private static func preferenceKey(_ parameters: Parameters) throws(ProtocolError) -> PreferenceKey {
        let namespace = try parameters.requiredString("namespace")
        let key = try parameters.requiredString("key")
        guard !key.isEmpty, key.utf8.count <= PreferenceKey.maximumBytes else {
            throw .invalidParameter("key", "a key is 1 to \(PreferenceKey.maximumBytes) bytes")
        }
        return PreferenceKey(namespace: namespace, key: key, account: try parameters.account())
    }
}
