import AccountdCore
import AccountdProtocol

extension Dispatcher {
    /// Which value a preference request is about.
    struct PreferenceTarget {
        var namespace: String
        var scope: PreferenceScope
        /// Nil for Keys.
        var key: String?
        /// The account, for a per-account namespace.
        var account: AccountName?
    }

    func preferenceTarget(_ request: Request) throws -> PreferenceTarget {
        let parameters = request.parameters
        let namespace = try parameters.requiredString("namespace")
        let scope = try service.preferences.scope(of: namespace)
        let key: String? = request.method == .keys ? nil : try parameters.requiredString("key")
        if let key { try PreferenceService.checkKey(key) }
        var account: AccountName?
        if scope == .account {
            if let given = try parameters.account() {
                account = given
            } else if let active = service.active {
                account = active
            } else {
                throw ProtocolError(
                    .noActiveAccount, "namespace '\(namespace)' is per account and no account is active; switch first or give \"account\"")
            }
        }
        return PreferenceTarget(namespace: namespace, scope: scope, key: key, account: account)
    }

    /// Get or Keys answered from memory; nil when the account's table is not open yet.
    func preferenceReadAtOnce(_ request: Request) throws -> Reply? {
        let target = try preferenceTarget(request)
        var database: PreferenceDatabase?
        if let account = target.account {
            guard let open = service.preferences.openAccountDatabase(account, store: service.store) else { return nil }
            database = open
        }
        return try read(request.method, target, accountDatabase: database)
    }

    /// The reply to Get or Keys. `accountDatabase` is the account's table for a per-account namespace.
    private func read(_ method: Method, _ target: PreferenceTarget, accountDatabase: PreferenceDatabase?) throws -> Reply {
        let preferences = service.preferences
        let namespace = target.namespace
        if let key = target.key {
            let value: JSONValue? =
                switch target.scope {
                case .memory: preferences.memoryGet(namespace, key)
                case .device: try preferences.deviceDatabase.get(namespace, key)
                case .account: accountDatabase!.get(namespace, key)
                }
            guard let value else { throw Self.keyNotFound(namespace, key, target.account) }
            return Reply(parameters: ["value": value])
        }
        let keys: [String] =
            switch target.scope {
            case .memory: preferences.memoryKeys(namespace)
            case .device: try preferences.deviceDatabase.keys(namespace)
            case .account: accountDatabase!.keys(namespace)
            }
        return Reply(parameters: ["keys": .array(keys.map { .string($0) })])
    }

    /// Get, Set, Delete and Keys.
    func preferences(_ request: Request, writer: ReplyWriter) async throws {
        let preferences = service.preferences
        let target = try preferenceTarget(request)
        let (namespace, scope, key, account) = (target.namespace, target.scope, target.key, target.account)

        switch request.method {
        case .get, .keys:
            let database = if let account { try await accountDatabase(account) } else { PreferenceDatabase?.none }
            try await writer.send(try read(request.method, target, accountDatabase: database))
        case .set, .delete:
            let change = try preferenceChange(request, target)
            let existed: Bool
            switch scope {
            case .memory: existed = preferences.memorySet(namespace, key!, change.value)
            case .device: existed = try await preferences.deviceDatabase.apply(change)
            case .account: existed = try await applyToAccount(account!, change)
            }
            try await writer.send(try changed(target, change, existed: existed))
        default:
            preconditionFailure("not a preference method: \(request.method)")
        }
    }

    /// How ``startChange(_:peer:done:)`` went.
    enum ChangeStart {
        /// Answered already: a memory value, or an error.
        case replied(Reply)
        /// Committing; the reply comes through the callback.
        case started
        /// Needs a task: not a Set or Delete, or the account's table is not open.
        case needsTask
    }

    /// How a change started by ``startChange(_:peer:done:)`` ended.
    enum ChangeEnd: Sendable {
        /// Committed, or failed: the reply.
        case answered(Reply)
        /// A switch or restore closed the account's table first: handle this request (the
        /// original, naming the account it was meant for) with ``handle(_:peer:writer:)``,
        /// which waits for that switch or restore and retries.
        case retry(Request)
    }

    /// Starts a Set or Delete without a task when its table is open, so that a write costs
    /// the connection no task and no thread of its own while its commit is gathered.
    ///
    /// `done` is called on the committing thread once the change is durably committed or has
    /// failed, or when a switch or restore closed the account's table first (see ``ChangeEnd``).
    func startChange(_ request: Request, peer: PeerCredentials, done: @escaping @Sendable (ChangeEnd) -> Void) -> ChangeStart {
        guard request.method == .set || request.method == .delete else { return .needsTask }
        do {
            try admit(request, peer: peer)
            let target = try preferenceTarget(request)
            let change = try preferenceChange(request, target)
            let database: PreferenceDatabase
            switch target.scope {
            case .memory:
                let existed = service.preferences.memorySet(target.namespace, target.key!, change.value)
                return .replied(try changed(target, change, existed: existed))
            case .device:
                database = try service.preferences.deviceDatabase
            case .account:
                guard let open = service.preferences.openAccountDatabase(target.account!, store: service.store) else { return .needsTask }
                database = open
            }
            database.apply(change) { result in
                do {
                    done(.answered(try changed(target, change, existed: result.get())))
                } catch is PreferenceDatabase.Closed where target.scope == .account {
                    // The retry is for this account, even if another is active by then.
                    var retry = request
                    if retry.parameters["account"] == nil {
                        retry.parameters.pairs.append(("account", .string(target.account!.rawValue)))
                    }
                    done(.retry(retry))
                } catch {
                    done(.answered(ErrorMapping.reply(for: error, method: request.method, logger: logger)))
                }
            }
            return .started
        } catch {
            return .replied(ErrorMapping.reply(for: error, method: request.method, logger: logger))
        }
    }

    /// The change a Set or Delete asks for.
    private func preferenceChange(_ request: Request, _ target: PreferenceTarget) throws -> PreferenceDatabase.Change {
        guard request.method == .set else { return .delete(namespace: target.namespace, key: target.key!) }
        guard let value = request.parameters["value"] else {
            throw ProtocolError(.invalidValue, "Set needs a \"value\" (any JSON value)")
        }
        return .set(namespace: target.namespace, key: target.key!, value: value)
    }

    /// The reply to a Set or Delete that was applied, after telling watchers.
    private func changed(_ target: PreferenceTarget, _ change: PreferenceDatabase.Change, existed: Bool) throws -> Reply {
        let value = change.value
        if value == nil && !existed { throw Self.keyNotFound(target.namespace, target.key!, target.account) }
        service.preferences.publishChange(target.namespace, target.key!, scope: target.scope, account: target.account, value: value)
        return Reply()
    }

    /// Applies a change to an account's preferences. A switch or restore may close the table
    /// between finding it and writing to it; the change is then retried on a fresh one, which
    /// is opened only once that switch or restore is done. An account switched to without
    /// pause may close it again, so retries go on for as long as any operation may wait for
    /// an account (`accounts.lockTimeoutSeconds`).
    private func applyToAccount(_ account: AccountName, _ change: PreferenceDatabase.Change) async throws -> Bool {
        let deadline = ContinuousClock.now + service.store.options.lockTimeout
        repeat {
            do {
                return try await accountDatabase(account).apply(change)
            } catch is PreferenceDatabase.Closed {
                continue
            }
        } while ContinuousClock.now < deadline
        throw AccountdError(.accountBusy, "account \(account) kept changing while its preference was being saved; retry", account: account.rawValue)
    }

    /// The account's preference table: at once when it is open, else opened on a pool thread
    /// once the file is found usable (see ``PreferenceService/accountDatabase(_:store:)``).
    private func accountDatabase(_ account: AccountName) async throws -> PreferenceDatabase {
        let (preferences, store) = (service.preferences, service.store)
        if let open = preferences.openAccountDatabase(account, store: store) { return open }
        return try await service.pool.run { try preferences.accountDatabase(account, store: store) }
    }

    static func keyNotFound(_ namespace: String, _ key: String, _ account: AccountName?) -> ProtocolError {
        let whose = account.map { " for account \($0)" } ?? ""
        return ProtocolError(
            .keyNotFound, "no key '\(key.prefix(128))' in namespace '\(namespace)'\(whose)",
            facts: [("namespace", .string(namespace)), ("key", .string(String(key.prefix(1024))))])
    }
}
