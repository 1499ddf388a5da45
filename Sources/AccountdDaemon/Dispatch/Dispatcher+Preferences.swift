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
            guard let open = service.preferences.openAccountDatabase(account) else { return nil }
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
        let parameters = request.parameters
        let preferences = service.preferences
        let target = try preferenceTarget(request)
        let (namespace, scope, key, account) = (target.namespace, target.scope, target.key, target.account)

        switch request.method {
        case .get, .keys:
            let database = if let account { try await accountDatabase(account) } else { PreferenceDatabase?.none }
            try await writer.send(try read(request.method, target, accountDatabase: database))
        case .set, .delete:
            var value: JSONValue?
            if request.method == .set {
                guard let given = parameters["value"] else {
                    throw ProtocolError(.invalidValue, "Set needs a \"value\" (any JSON value)")
                }
                value = given
            }
            let change: PreferenceDatabase.Change =
                if let value { .set(namespace: namespace, key: key!, value: value) } else { .delete(namespace: namespace, key: key!) }
            let existed: Bool
            switch scope {
            case .memory: existed = preferences.memorySet(namespace, key!, value)
            case .device: existed = try await preferences.deviceDatabase.apply(change)
            case .account:
                existed = try await applyToAccount(account!, change)
            }
            if value == nil && !existed { throw Self.keyNotFound(namespace, key!, account) }
            preferences.publishChange(namespace, key!, scope: scope, account: account, value: value)
            try await writer.send(Reply())
        default:
            preconditionFailure("not a preference method: \(request.method)")
        }
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

    /// The account's preference table: at once when it is open, else opened on a pool thread.
    private func accountDatabase(_ account: AccountName) async throws -> PreferenceDatabase {
        let preferences = service.preferences
        if let open = preferences.openAccountDatabase(account) { return open }
        return try await service.pool.run { try preferences.accountDatabase(account) }
    }

    static func keyNotFound(_ namespace: String, _ key: String, _ account: AccountName?) -> ProtocolError {
        let whose = account.map { " for account \($0)" } ?? ""
        return ProtocolError(
            .keyNotFound, "no key '\(key.prefix(128))' in namespace '\(namespace)'\(whose)",
            facts: [("namespace", .string(namespace)), ("key", .string(String(key.prefix(1024))))])
    }
}
