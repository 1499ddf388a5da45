import AccountdCore
import AccountdProtocol

/// The access decision for every call (SPEC section 12, "Accounts belong to people").
extension Dispatcher {
    /// Resolves the account `command` acts on and checks that `peer` may make it: the one
    /// place a per-account call is allowed or refused.
    ///
    /// A preference call that names no account of a per-account namespace is given the
    /// caller's active account here, once, so the account checked is the account used.
    ///
    /// - Returns: the command, naming the account it acts on.
    /// - Throws: `PermissionDenied` (logged with the uid), or the namespace's error.
    func authorize(_ command: Command, peer: PeerCredentials) throws -> Command {
        let (need, resolved) = try need(of: command, peer: peer)
        try refuseMigrateFalse(resolved, peer: peer)
        try check(need, for: command.method, peer: peer)
        return resolved
    }

    /// `migrate: false` on `Query` or `Execute` is for admins only: refused for anyone else
    /// with a message naming the parameter (not a missing grant, which the caller may have).
    private func refuseMigrateFalse(_ command: Command, peer: PeerCredentials) throws {
        let account: AccountName?
        switch command {
        case .query(let target, _, _, false), .execute(let target, _, false): account = target
        default: return
        }
        let policy = policy.current
        guard !policy.isAdmin(peer) else { return }
        let on = account.map { " on account \($0)" } ?? ""
        logger.warning("refused \(command.method.rawValue) from uid \(peer.uid): migrate: false is for admins", metadata: ["peer_uid": "\(peer.uid)"])
        throw ProtocolError(
            .permissionDenied,
            "\(command.method.rawValue)\(on) with migrate: false is for admins only (root, the daemon's user, or the users and groups in admin.users and admin.groups); you are uid \(peer.uid). Leave migrate out: the account is then brought to the bundle's version first, as a grant allows",
            facts: [("method", .string(command.method.qualifiedName))] + (account.map { [("account", JSONValue.string($0.rawValue))] } ?? []))
    }

    /// What `command` needs (``AccessPolicy/Need``), and the command with its account resolved.
    ///
    /// A new per-account method adds one line here: `Query` as `.read`, `Execute` as
    /// `.write`, of `account ?? activeAccount(of: peer)`.
    func need(of command: Command, peer: PeerCredentials) throws -> (AccessPolicy.Need, Command) {
        switch command {
        case .info, .ping, .metrics, .list, .watch, .replication, .status(nil):
            return (.anyone, command)
        case .status(let account?), .export(let account, _):
            return (.read(account), command)
        case .switchAccount(let account, _), .snapshot(let account, _):
            return (.write(account), command)
        case .verify, .plan, .snapshots, .restore, .remove, .migrate, .pull, .importAccount:
            return (.admin, command)
        case .get(let key), .delete(let key), .set(let key, _):
            return try preferenceNeed(command, namespace: key.namespace, account: key.account, peer: peer)
        case .keys(let namespace, let account):
            return try preferenceNeed(command, namespace: namespace, account: account, peer: peer)
        case .query(let account, let statement, let maxRows, let migrate):
            let target = try account ?? activeAccountOrOpening(of: peer)
            // Reading a file at a version the bundle does not serve is an operator's repair tool.
            return (migrate ? .read(target) : .admin, .query(account: target, statement: statement, maxRows: maxRows, migrate: migrate))
        case .execute(let account, let statements, let migrate):
            let target = try account ?? activeAccountOrOpening(of: peer)
            return (migrate ? .write(target) : .admin, .execute(account: target, statements: statements, migrate: migrate))
        }
    }

    /// `peer`'s active account, when it may still read it: one a reload or a restart took its
    /// access to is cleared as its active account (``SwitchService/active(for:under:)``), so
    /// its calls without `account` get `NoActiveAccount`, not another refusal on each call.
    func activeAccount(of peer: PeerCredentials) -> AccountName? {
        services.switching.active(for: peer, under: policy.current)
    }

    /// `peer`'s active account for a call that needs one, as ``activeAccount(of:)``; while
    /// start-up is still opening `peer`'s saved active account (`Status` `opening`), a call
    /// without `account` is answered `AccountBusy` naming it, not `NoActiveAccount`: the
    /// account becomes active by itself once it opens.
    func activeAccountOrOpening(of peer: PeerCredentials) throws -> AccountName? {
        if let active = activeAccount(of: peer) { return active }
        let policy = policy.current
        guard let opening = services.switching.opening(for: peer.uid), policy.isAdmin(peer) || policy.mayRead(opening.account, peer: peer)
        else { return nil }
        let (account, why) = (opening.account, opening.problem.map { " (\($0))" } ?? "")
        throw ProtocolError(
            .accountBusy,
            "your saved active account \(account) is still being opened at start-up\(why); it becomes active by itself once it opens (Status then says ready): retry then, or give \"account\"",
            facts: [("account", .string(account.rawValue))])
    }

    /// A preference call: of a per-account namespace, a grant on the account (the one named,
    /// or the caller's active one); of a device or memory namespace, anyone may read and
    /// only admins change.
    private func preferenceNeed(_ command: Command, namespace: String, account: AccountName?, peer: PeerCredentials) throws -> (
        AccessPolicy.Need, Command
    ) {
        let changes = command.method == .set || command.method == .delete
        switch try services.preferences.scope(of: namespace) {
        case .device, .memory:
            return (changes ? .admin : .anyone, command)
        case .account:
            let target = try account ?? activeAccountOrOpening(of: peer)
            return (changes ? .write(target) : .read(target), command.naming(target))
        }
    }

    /// Which accounts `peer` may see listed (`List`, `Replication`) or hear of (`Watch`):
    /// those it may read, as the policy in force says when asked.
    func readable(by peer: PeerCredentials) -> @Sendable (AccountName) -> Bool {
        let policy = policy.current
        if policy.isAdmin(peer) { return { _ in true } }
        return { policy.mayRead($0, peer: peer) }
    }

    /// What a `Watch` of `peer` is sent of each event: the event; for a peer that is not an
    /// admin, nothing of an event about an account it may not read, and an event's
    /// `previous` account left out (null) unless it may read it. Events that name no account
    /// (a device-scoped preference change) go to every watcher, as device preferences are
    /// readable by all. The policy in force when the event is published decides.
    func watchFilter(for peer: PeerCredentials) -> @Sendable (JSONValue) -> JSONValue? {
        let policy = policy
        return { event in
            let current = policy.current
            if current.isAdmin(peer) { return event }
            func readable(_ name: String) -> Bool {
                guard let account = try? AccountName(name) else { return false }
                return current.mayRead(account, peer: peer)
            }
            if let name = event["account"]?.stringValue, !readable(name) { return nil }
            guard let previous = event["previous"]?.stringValue, !readable(previous), case .object(let pairs) = event else { return event }
            return .object(pairs.map { $0.0 == "previous" ? ("previous", .null) : $0 })
        }
    }

    /// The `Metrics` text for `peer`: for a peer that is not an admin, without the samples
    /// labelled with an account it may not read (`accountd_active_account` names the active
    /// account of the uid that switched last, which may be another person's).
    func metricsText(_ text: String, for peer: PeerCredentials) -> String {
        let policy = policy.current
        guard !policy.isAdmin(peer) else { return text }
        let label = "account=\""
        var kept: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard !line.hasPrefix("#"), let start = line.range(of: label)?.upperBound,
                let end = line[start...].firstIndex(of: "\"")
            else {
                kept.append(line)
                continue
            }
            if let account = try? AccountName(String(line[start..<end])), policy.mayRead(account, peer: peer) { kept.append(line) }
        }
        return kept.joined(separator: "\n")
    }
}
