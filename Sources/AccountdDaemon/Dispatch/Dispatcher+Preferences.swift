import AccountdCore
import AccountdProtocol
import NIOCore
import Synchronization

extension Dispatcher {
    /// Where a preference request's values live, the account resolved.
    enum PreferencePlace: Sendable {
        case memory
        case device
        /// The account named in the request, or the active one.
        case account(AccountName)

        var scope: PreferenceScope {
            switch self {
            case .memory: .memory
            case .device: .device
            case .account: .account
            }
        }

        var account: AccountName? {
            if case .account(let account) = self { account } else { nil }
        }
    }

    /// How many keys a namespace may hold for `Keys` to be answered at once on the event
    /// loop: sorting and encoding a million took the loop about 240 ms (hostile32 F4).
    static let keysAtOnce = 4_096

    /// About how many bytes of JSON a `Get` or `Keys` reply made on the event loop may have:
    /// with one loop for every connection, a 1 MB value took it 11 ms and 4,096 keys of
    /// 1 KB 30–40 ms, which every other client waited for (hostile24 F1). Larger replies are
    /// made on the pool.
    static let bytesAtOnce = 64 * 1024

    /// Get or Keys answered from memory; nil when the account's table is not open yet, or
    /// when the reply is large (``isSmall(_:_:in:)``).
    func readAtOnce(_ command: Command) throws -> Reply? {
        let (namespace, key, place) = try preferenceTarget(command)
        guard let table = try tableAtOnce(place), Self.isSmall(namespace, key, in: table) else { return nil }
        return try read(namespace, key, place, in: table)
    }

    /// Get or Keys, opening the account's table when needed. A large reply
    /// (``isSmall(_:_:in:)``) is made on the pool, within the caller's share of it (`uid`'s,
    /// as an app's statements: ``UidShares``), and written alone, after the replies before it:
    /// then nil.
    func read(_ command: Command, uid: UInt32, writer: ReplyWriter) async throws -> Reply? {
        let (namespace, key, place) = try preferenceTarget(command)
        let table = try await table(place)
        guard !Self.isSmall(namespace, key, in: table) else { return try read(namespace, key, place, in: table) }
        let encoded = try await services.data.shares.run(uid) { [self] in
            try await services.pool.run { [self] in
                var bytes: [UInt8] = []
                try read(namespace, key, place, in: table).encode(into: &bytes)
                return ByteBuffer(bytes: bytes)
            }
        }
        // Written alone, after the replies before it; the connection answers nothing more
        // until the socket has taken it (its channel is not writable meanwhile).
        _ = writer.start(encoded)
        return nil
    }

    /// Whether the reply to a Get of `key` (to a Keys when nil) is small enough to be made on
    /// the event loop: at most ``keysAtOnce`` keys of at most ``bytesAtOnce`` bytes together,
    /// or a value of about that many bytes at most (``JSONValue/fits(within:)``, which looks
    /// at no more of the value than that).
    private static func isSmall(_ namespace: String, _ key: String?, in table: any PreferenceTable) -> Bool {
        guard let key else { return table.keyCount(namespace) <= keysAtOnce && table.keyBytes(namespace) <= bytesAtOnce }
        return table.get(namespace, key)?.fits(within: bytesAtOnce) ?? true
    }

    /// A Set or Delete, run the way its table allows: a `memory` namespace's answered at
    /// once; a change to an open table handed to its group commit, without a task, so that
    /// a write costs the connection no task and no thread of its own while its commit is
    /// gathered; any other in a task, which opens the table first (``change(_:)``).
    ///
    /// The group commit ends the call on the connection's event loop: the reply, the event
    /// and the count are made there, beside the other requests, not one after another on
    /// the thread that the next commit waits for. If a switch or restore closed the
    /// account's table first, the call goes on in a task, naming the account it was meant
    /// for, which waits for that switch or restore and tries again.
    func change(_ call: Call, writer: ConnectionWriter) -> Response {
        let place: PreferencePlace
        let table: any PreferenceTable
        let change = preferenceChange(call.command)
        do {
            place = try preferenceTarget(call.command).2
            if case .memory = place {
                return finish(call, .success(try changed(place, change, existed: services.preferences.memory.apply(change))), writer: writer)
            }
            guard let open = try tableAtOnce(place) else { return task(call, writer) { _ in try await self.change(call.command) } }
            table = open
        } catch {
            return finish(call, .failure(error), writer: writer)
        }
        let answers = loopAnswers(for: writer)
        let bound = NIOLoopBound(writer, eventLoop: writer.loop)
        table.apply(change) { result in
            // On the committing thread: nothing but the hand-over to the loop, which takes the
            // commit's answers for its connections together (``LoopAnswers``).
            answers.post(LoopAnswers.Answer(dispatcher: self, writer: bound, call: call, place: place, change: change, result: result))
        }
        return .running
    }

    /// Ends a Set or Delete that its group commit answered, on its connection's event loop:
    /// its reply, event and count, or, when a switch or restore closed the account's table
    /// first, the same change in a task that waits for it and tries again.
    func answered(_ answer: LoopAnswers.Answer) {
        let writer = answer.writer.value
        let call = answer.call
        if case .failure(let error) = answer.result, error is PreferenceDatabase.Closed, let account = answer.place.account {
            // The retry is for this account, even if another is active by then.
            let command = call.command.naming(account)
            let retry = Call(command: command, more: call.more, peer: call.peer, received: call.received, oneway: call.oneway)
            _ = task(retry, writer) { _ in try await self.change(command) }
            return
        }
        finish(call, Result { try changed(answer.place, answer.change, existed: answer.result.get()) }, writer: writer)
        writer.requestEnded()
    }

    /// The queue of group-commit answers for `writer`'s event loop, one per loop, made on first use.
    private func loopAnswers(for writer: ConnectionWriter) -> LoopAnswers {
        if let known = writer.commitAnswers { return known }
        let loop = writer.loop
        let answers = answerQueues.withLock { queues in
            if let known = queues[ObjectIdentifier(loop)] { return known }
            let made = LoopAnswers(loop: loop)
            queues[ObjectIdentifier(loop)] = made
            return made
        }
        writer.commitAnswers = answers
        return answers
    }

    /// Set or Delete, opening the account's table when needed.
    ///
    /// A switch or restore may close an account's table between finding it and writing to
    /// it; the change is then retried on a fresh one, which is opened only once that switch
    /// or restore is done. An account switched to without pause may close it again, so
    /// retries go on for as long as any operation may wait for an account
    /// (`accounts.lockTimeoutSeconds`).
    func change(_ command: Command) async throws -> Reply {
        let (_, _, place) = try preferenceTarget(command)
        let change = preferenceChange(command)
        let deadline = ContinuousClock.now + services.stores.current.options.lockTimeout
        repeat {
            do {
                let table = try await table(place)
                let existed = try await withCheckedThrowingContinuation { continuation in
                    table.apply(change) { continuation.resume(with: $0) }
                }
                return try changed(place, change, existed: existed)
            } catch is PreferenceDatabase.Closed {
                continue
            }
        } while ContinuousClock.now < deadline
        let account = place.account?.rawValue ?? ""
        throw AccountdError(.accountBusy, "account \(account) kept changing while its preference was being saved; retry", account: account)
    }

    /// The namespace, the key (nil for Keys) and the place of a preference command.
    private func preferenceTarget(_ command: Command) throws -> (String, String?, PreferencePlace) {
        let (namespace, key, account): (String, String?, AccountName?) =
            switch command {
            case .get(let target), .set(let target, _), .delete(let target): (target.namespace, target.key, target.account)
            case .keys(let namespace, let account): (namespace, nil, account)
            default: preconditionFailure("not a preference command: \(command.method)")
            }
        switch try services.preferences.scope(of: namespace) {
        case .memory: return (namespace, key, .memory)
        case .device: return (namespace, key, .device)
        case .account:
            // Admission named the caller's active account when the request named none (``Dispatcher/authorize(_:peer:)``).
            guard let account else {
                throw ProtocolError(
                    .noActiveAccount,
                    "namespace '\(namespace)' is per account and no account is active for your uid (each uid has its own); switch first or give \"account\"")
            }
            return (namespace, key, .account(account))
        }
    }

    /// The table of `place` when it needs no waiting: memory, the device's, or an account's open one.
    private func tableAtOnce(_ place: PreferencePlace) throws -> (any PreferenceTable)? {
        let preferences = services.preferences
        switch place {
        case .memory: return preferences.memory
        case .device: return try preferences.deviceDatabase
        case .account(let account): return preferences.openAccountDatabase(account, store: services.stores.current)
        }
    }

    /// The table of `place`; an account's is opened on a pool thread once the file is found
    /// usable (see ``PreferenceService/accountDatabase(_:store:holding:)``).
    private func table(_ place: PreferencePlace) async throws -> any PreferenceTable {
        if let table = try tableAtOnce(place) { return table }
        guard case .account(let account) = place else { preconditionFailure("memory and device tables are always open") }
        let (preferences, store, pool) = (services.preferences, services.stores.current, services.pool)
        return try await store.withHold(account) { hold in
            try await pool.run { try preferences.accountDatabase(account, store: store, holding: hold) }
        }
    }

    /// The reply to Get (with a key) or Keys.
    private func read(_ namespace: String, _ key: String?, _ place: PreferencePlace, in table: any PreferenceTable) throws -> Reply {
        guard let key else { return Reply(KeysReply(keys: table.keys(namespace))) }
        guard let value = table.get(namespace, key) else { throw Self.keyNotFound(namespace, key, place.account) }
        return Reply(PreferenceValue(value: value))
    }

    /// The change a Set or Delete asks for.
    private func preferenceChange(_ command: Command) -> PreferenceDatabase.Change {
        switch command {
        case .set(let target, let value): .set(namespace: target.namespace, key: target.key, value: value)
        case .delete(let target): .delete(namespace: target.namespace, key: target.key)
        default: preconditionFailure("not a Set or Delete: \(command.method)")
        }
    }

    /// The reply to a Set or Delete that was applied, after telling watchers.
    private func changed(_ place: PreferencePlace, _ change: PreferenceDatabase.Change, existed: Bool) throws -> Reply {
        let (namespace, key) =
            switch change {
            case .set(let namespace, let key, _), .delete(let namespace, let key): (namespace, key)
            }
        if change.value == nil && !existed { throw Self.keyNotFound(namespace, key, place.account) }
        services.preferences.publishChange(namespace, key, scope: place.scope, account: place.account, value: change.value)
        return Reply()
    }

    static func keyNotFound(_ namespace: String, _ key: String, _ account: AccountName?) -> ProtocolError {
        let whose = account.map { " for account \($0)" } ?? ""
        return ProtocolError(
            .keyNotFound, "no key '\(key.prefix(128))' in namespace '\(namespace)'\(whose)",
            facts: [("namespace", .string(namespace)), ("key", .string(String(key.prefix(1024))))])
    }
}

extension Command {
    /// The same preference command, naming `account` when it named none.
    func naming(_ account: AccountName?) -> Command {
        switch self {
        case .get(var target) where target.account == nil:
            target.account = account
            return .get(target)
        case .keys(let namespace, nil):
            return .keys(namespace: namespace, account: account)
        case .set(var target, let value) where target.account == nil:
            target.account = account
            return .set(target, value: value)
        case .delete(var target) where target.account == nil:
            target.account = account
            return .delete(target)
        default:
            return self
        }
    }
}
