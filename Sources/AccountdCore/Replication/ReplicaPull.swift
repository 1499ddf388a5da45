import AccountdProtocol
import Foundation
import GRDB

/// Brings an account from a Litestream replica into a data root: `accountd pull` and `Pull`.
///
/// `litestream restore` writes the replica's newest state into a private folder (0700) made
/// afresh under `accounts/` (a name no account can have), where no one else can plant a
/// link for it to follow (run as root on another user's data root, Litestream runs as that
/// user: ``DataRoot/foreignOwner()``); the copy is then checked like any account
/// file (an accountd file, bound to this account, at a version the caller accepts, whole by
/// SQLite's `integrity_check`), put in WAL mode, made durable, and linked into place with
/// `link()`, which never replaces a file. An account that already has a file is refused
/// before anything is touched; on every failure the staging file goes and the data root is
/// as it was. The next switch opens (or migrates) the pulled file as usual. A pull ends a
/// handoff of the account from this host (``DataRoot/eraseHandoff(_:)``).
public struct ReplicaPull: Sendable {
    public var root: DataRoot
    public var replica: ReplicaURL
    public var litestream: LitestreamProgram
    /// This host's own replica (the daemon's `replication.litestream.replica`); nil when not
    /// known (the offline tool), which counts as the replica pulled from. A copy whose
    /// ``HandoffMark`` names the replica it comes from is refused when that replica is this
    /// host's own, unless ``reclaim``.
    public var home: String?
    /// Take a copy marked as handed off from this host's own replica all the same.
    public var reclaim = false

    /// What a pull brought.
    public struct Outcome: Sendable {
        public var account: AccountName
        /// The schema version of the pulled file.
        public var version: Int
        /// The file's size in bytes.
        public var sizeBytes: Int64
        /// The Litestream transaction the copy was restored to (hexadecimal, as Litestream prints it).
        public var txid: String?
    }

    public init(root: DataRoot, replica: ReplicaURL, litestream: LitestreamProgram) {
        self.root = root
        self.replica = replica
        self.litestream = litestream
    }

    /// A pull between its steps: where Litestream restores to, and the private
    /// configuration that names the replica.
    public struct Staged: Sendable {
        public var account: AccountName
        /// The replica's URL for the account (with any password: never shown).
        var source: String
        /// The staging file Litestream writes.
        var temp: String
        /// The configuration file's path without its `.yml`.
        var config: String
    }

    /// A pull's first step, blocking (files only): refuses an account that has a file here,
    /// clears what an earlier pull left, and writes the configuration for ``restore(_:)``.
    ///
    /// A pull is three steps, in this order: ``stage(_:)`` and ``finish(_:after:accept:)``
    /// touch only files (run them where blocking is allowed), ``restore(_:)`` waits for
    /// Litestream without a thread. After ``stage(_:)``, either ``finish(_:after:accept:)``
    /// or ``discard(_:)`` runs: each removes what the pull staged.
    ///
    /// - Throws: ``AccountdError``: `accountExists` when the account has a file here, `storage`.
    public func stage(_ account: AccountName) throws -> Staged {
        let path = root.accountPath(account)
        guard FileSystem.entry(at: path) == .missing else {
            throw AccountdError(
                .accountExists,
                "account \(account) already has a file here (\(path)); a pull never replaces one, and nothing was touched. "
                    + "Remove the account first ('accountctl remove \(account)') if the replica's copy should win",
                account: account.rawValue, file: path)
        }
        // Whatever an earlier pull left there (a file, a folder, a link) goes first, and what
        // this one leaves goes in finish or discard, without following a link. Litestream
        // writes into a private folder made afresh: no name it writes through can be planted.
        let temp = try root.makeLitestreamStaging(account, .pulling)
        do {
            let config = try writeConfiguration(replica.account(account))
            // Litestream run as the data root's owner (root running the offline tool) must reach
            // its configuration and folder.
            if litestream.user != nil { try root.keepOwner() }
            return Staged(account: account, source: replica.account(account), temp: temp, config: config)
        } catch {
            // Nothing staged is left behind (a `tmp/` that is a link refuses the configuration).
            try? root.clearStaging(account, .pulling)
            throw error
        }
    }

    /// A pull's second step: `litestream restore` of the replica into the staging file.
    /// Nothing waits on a thread for Litestream.
    ///
    /// - Throws: `storage` when Litestream cannot be run.
    public func restore(_ staged: Staged) async throws -> LitestreamProgram.Run {
        try await litestream.run(["restore", "-config", staged.config + ".yml", "-no-expand-env", "-json", "-o", staged.temp, staged.config + ".sqlite"])
    }

    /// The three steps of a pull in a program of its own (`accountd pull`, `accountd migrate
    /// --create`), whose thread may block in ``stage(_:)`` and ``finish(_:after:accept:)``;
    /// what was staged is removed whatever happens.
    ///
    /// - Throws: as ``stage(_:)``, ``restore(_:)`` and ``finish(_:after:accept:)``.
    public func pullHere(_ account: AccountName) async throws -> Outcome {
        let staged = try stage(account)
        let run: LitestreamProgram.Run
        do {
            run = try await restore(staged)
        } catch {
            discard(staged)
            throw error
        }
        return try finish(staged, after: run)
    }

    /// Removes what ``stage(_:)`` left, when ``restore(_:)`` failed. Blocking (files only).
    public func discard(_ staged: Staged) {
        unlink(staged.config + ".yml")
        try? root.clearStaging(staged.account, .pulling)
    }

    /// A pull's last step, blocking: checks the copy ``restore(_:)`` made and links it into place.
    ///
    /// - Parameter accept: decides whether the pulled file's version may be used here; it
    ///   throws (e.g. `accountTooNew`) to refuse it. The daemon refuses a version its bundle
    ///   cannot read; `accountd pull` takes any version.
    /// - Throws: ``AccountdError``: `accountExists` when the account got a file here meanwhile,
    ///   `accountNotFound` when the replica holds nothing for it, `accountCorrupt` when the
    ///   copy is not a sound file of this account, `storage` when Litestream or the disk fails.
    public func finish(
        _ staged: Staged, after run: LitestreamProgram.Run, accept: (_ version: Int, _ lastCompatible: Int) throws -> Void = { _, _ in }
    ) throws -> Outcome {
        defer { discard(staged) }
        let (account, source, temp) = (staged.account, staged.source, staged.temp)
        let path = root.accountPath(account)
        // What leaves this function names the replica without its password.
        let shown = replica.redact(source)
        guard run.status == 0 else {
            let said = replica.redact(run.errors.trimmingCharacters(in: .whitespacesAndNewlines))
            if said.contains("no matching backup") || said.contains("no snapshots available") {
                throw AccountdError(
                    .accountNotFound, "the replica \(shown) holds nothing for account \(account) (litestream: \(said))",
                    account: account.rawValue, file: shown)
            }
            throw AccountdError(
                .storage, "litestream restore of account \(account) from \(shown) failed (exit status \(run.status)): \(said); nothing was changed here",
                account: account.rawValue, file: shown)
        }
        let txid = (try? JSONParser.parse(run.output)).flatMap { $0["txid"]?.stringValue }
        let facts: AccountFacts
        let mode: String?
        do {
            try makePrivate(account, staged: temp)
            facts = try AccountInspector.inspect(path: temp, account: account, deep: false)
            try accept(facts.version, facts.lastCompatibleVersion)
            let queue = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "pull"))
            let problems: [String]
            let mark: HandoffMark.Mark?
            (problems, mode, mark) = try queue.writeWithoutTransaction { db in
                (
                    try String.fetchAll(db, sql: "PRAGMA integrity_check"), try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL"),
                    try HandoffMark.read(db)
                )
            }
            try queue.close()
            guard problems == ["ok"] else {
                throw AccountdError.corrupt(account, path: temp, "fails SQLite's integrity check after restore: " + problems.prefix(5).joined(separator: "; "))
            }
            if let mark {
                try refuseOwnHandoff(account, mark: mark, from: shown)
                // Taken here: the mark is this host's no more, and its replica never carries it.
                try HandoffMark.remove(temp)
            }
        } catch let error as AccountdError where error.reason != nil {
            throw Self.refusedCopy(error, account: account, from: shown)
        }
        guard mode?.lowercased() == "wal" else {
            throw AccountdError(.storage, "putting the pulled copy \(temp) in WAL mode failed (journal_mode is \(mode ?? "unknown"))", file: temp)
        }
        for suffix in ["-wal", "-shm"] { try FileSystem.removeIfPresent(temp + suffix) }
        // The handoff record is ended after the link: a `moved/` it could not end (a link, not
        // a folder) is refused first, with nothing linked into place (hostile33e #6).
        _ = try root.folder.subfolder("moved", account: account)
        guard try FileSystem.linkIntoPlace(temp, at: path) else {
            throw AccountdError(
                .accountExists, "account \(account) was created here while it was being pulled; nothing was replaced",
                account: account.rawValue, file: path)
        }
        // The account is back: a handoff of it from this host ends here.
        try root.eraseHandoff(account)
        return Outcome(account: account, version: facts.version, sizeBytes: FileSystem.size(of: path), txid: txid)
    }

    /// Refuses (`accountMoved`) a copy marked as handed off from the replica it comes from,
    /// when that replica is this host's own (or this host's is not known) and the pull does not
    /// ``reclaim``: this host (or the one it replaces after a machine loss) handed the account
    /// off, and another host may serve it now.
    private func refuseOwnHandoff(_ account: AccountName, mark: HandoffMark.Mark, from shown: String) throws {
        guard !reclaim, HandoffMark.sameReplica(mark.replica, replica.base), home.map({ HandoffMark.sameReplica($0, replica.base) }) ?? true else {
            return
        }
        throw AccountdError(
            .accountMoved,
            "account \(account) was handed off from the replica \(shown) at \(mark.at) (its copy there says so), and another host may serve it now: "
                + "pulling this copy here would make two hosts serve diverging copies. Pull the new owner's copy with --replica URL (its replica), "
                + "or take this copy back on purpose with --reclaim. The pulled copy was removed and nothing here changed",
            account: account.rawValue, file: shown)
    }

    /// A pulled copy refused (`error`: ``AccountdError/corrupt(_:path:_:)``, too new) said of
    /// the copy, not of a file here: the copy was removed (``finish(_:after:accept:)`` discards
    /// it) and nothing here changed; the kind and versions stay, the file named is the replica.
    static func refusedCopy(_ error: AccountdError, account: AccountName, from shown: String) -> AccountdError {
        var refusal = error
        let advice =
            error.kind == .accountTooNew
            ? "Upgrade the app (a bundle that reads that version), then pull again"
            : "Check that the replica is account \(account)'s: the base of the host it was on, given with --replica"
        refusal.message =
            "the copy of account \(account) pulled from \(shown) was refused: it \(error.reason ?? "is not usable"). "
            + "The pulled copy was removed and nothing here changed (account \(account) still has no file here). \(advice)"
        refusal.file = shown
        return refusal
    }

    /// Checks that what `litestream restore` left at the staging name is a regular file,
    /// not a link, and makes it 0600: opened with `O_NOFOLLOW` and changed through that
    /// descriptor (`fchmod`), so no link's target is ever changed.
    ///
    /// - Throws: `accountCorrupt` when it is a link or not a regular file; `storage` when it
    ///   cannot be opened or changed.
    private func makePrivate(_ account: AccountName, staged temp: String) throws {
        guard let staging = try root.accountsFolder(for: account)?.subfolder(root.stagingName(account, .pulling), account: account) else {
            throw AccountdError.storage("opening the folder of", path: temp, errno: ENOENT)
        }
        let name = (temp as NSString).lastPathComponent
        switch staging.entry(name) {
        case .regularFile: break
        case .symlink:
            throw AccountdError.corrupt(account, path: temp, "is a symbolic link where Litestream's copy should be; accountd never follows links inside the data root")
        default:
            throw AccountdError.corrupt(account, path: temp, "is not a regular file where Litestream's copy should be")
        }
        let fd = try staging.openFile(name, O_RDONLY)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw AccountdError.corrupt(account, path: temp, "is not a regular file where Litestream's copy should be")
        }
        guard fchmod(fd, 0o600) == 0 else { throw AccountdError.storage("making the pulled copy private:", path: temp, errno: errno) }
    }

    /// The prefix of the configuration files ``writeConfiguration(_:)`` writes under `tmp/`.
    static let restoreConfigPrefix = "litestream-restore-"

    /// Writes the configuration of a `litestream restore` of `source`, with the replica's URL in a private
    /// configuration file (0600, in the data root's 0700 `tmp/`) rather than on Litestream's
    /// command line, which every local user can read (`ps`, `/proc/PID/cmdline`): the URL
    /// may carry a password; returns its path without `.yml`. The file goes when the pull ends; one left by a crash is
    /// removed by a pull an hour later or more.
    private func writeConfiguration(_ source: String) throws -> String {
        try ReplicaCommand.writeConfiguration(source, in: root, prefix: Self.restoreConfigPrefix)
    }
}
