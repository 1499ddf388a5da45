import AccountdClient
import AccountdProtocol
import ArgumentParser
import Foundation

/// `accountctl migrate [--all | ACCOUNT...]`: bring account files to the bundle's version,
/// create missing ones, or roll a release back.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate accounts to the bundle's version without switching to them.",
        discussion: """
            Give the accounts, or --all for every account. With --canary N, the first N \
            accounts are migrated first, and the rest only if all of them succeeded; with \
            --max-failures F, no account begins once F have failed. Accounts not begun are \
            skipped; run the same command again to go on, as the accounts done are then \
            current. --canary-accounts A,B names the canary instead (taken first); \
            --exclude A,B leaves accounts out; --create creates the named accounts that \
            are missing, at the bundle's version (provisioning a fleet without switching). \
            --rollback-to N rolls a release back: each account above version N is \
            restored from its newest before-migrate snapshot at N (load the previous \
            bundle first; the replaced file is kept as a snapshot). Named accounts are \
            reported one per line; with --all, only failures \
            are, beside a progress bar with the rate and the time left. A table of the \
            failures by error ends the output. A reload that withdraws the bundle the \
            command runs under (the previous release put back) stops it: the migrations \
            running roll back whole and are reported interrupted (counted apart from the \
            accounts that failed), the rest, and any account still waiting for its turn, \
            skipped, and the summary says which bundle version was withdrawn. Exits 1 when \
            any account failed, was interrupted or was skipped, or the bundle was \
            withdrawn. Needs an admin peer.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Migrate every account.")
    var all = false

    @Option(help: ArgumentHelp("Migrate the first N accounts first; go on only if all succeed.", valueName: "n"))
    var canary: Int?

    @Option(help: ArgumentHelp("Begin no account once F have failed.", valueName: "f"))
    var maxFailures: Int?

    @Option(help: ArgumentHelp("The accounts the canary is made of, comma-separated; they go first.", valueName: "names"))
    var canaryAccounts: String?

    @Option(help: ArgumentHelp("Accounts to leave out, comma-separated (may be repeated).", valueName: "names"))
    var exclude: [String] = []

    @Flag(help: "Create the named accounts that are missing, at the bundle's version.")
    var create = false

    // Unconditional: '--rollback-to -1' is a value (then refused by validate()), not a flag.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Roll back: restore each account above version N from its before-migrate snapshot at N.", valueName: "n"))
    var rollbackTo: Int?

    @Argument(help: "The accounts to migrate.")
    var accounts: [String] = []

    /// A comma-separated list of names, as given.
    static func names(_ lists: [String]) -> [String] {
        lists.flatMap { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
    }

    func validate() throws {
        if all && !accounts.isEmpty { throw ValidationError("give either --all or account names, not both") }
        if !all && accounts.isEmpty { throw ValidationError("name the accounts to migrate, or give --all") }
        for account in accounts + Self.names(exclude) + Self.names(canaryAccounts.map { [$0] } ?? []) { try validateAccountName(account) }
        if canary != nil && canaryAccounts != nil { throw ValidationError("give either --canary N or --canary-accounts NAMES, not both") }
        let canaryNames = Self.names(canaryAccounts.map { [$0] } ?? [])
        if canaryAccounts != nil && canaryNames.isEmpty {
            throw ValidationError("--canary-accounts names no account; name the canary's accounts, or leave it out for no canary")
        }
        if let left = canaryNames.first(where: { Self.names(exclude).contains($0) }) {
            throw ValidationError("\(left) is both in --canary-accounts and in --exclude; a canary of left-out accounts would stage nothing")
        }
        if create && all { throw ValidationError("--create creates named accounts: name them rather than --all") }
        if create && rollbackTo != nil { throw ValidationError("--rollback-to creates nothing; leave --create out") }
        if let rollbackTo, rollbackTo < 0 { throw ValidationError("--rollback-to must be a version, 0 or more") }
        for (name, value) in [("--canary", canary), ("--max-failures", maxFailures)] {
            if let value, !(1...MigrateRollout.maximum).contains(value) {
                throw ValidationError("\(name) must be a whole number from 1 to \(MigrateRollout.maximum)")
            }
        }
    }

    func run() async throws {
        var total: Int64? = all ? nil : Int64(accounts.count)
        var progress = Progress("migrating", shown: !global.json)
        var done: Int64 = 0
        var failures: [MigrateResult] = []
        progress.update(done: 0, total: total, force: true)
        var summary: MigrateSummary?
        let rollout = MigrateRollout(
            canary: canary, maxFailures: maxFailures, create: create,
            canaryAccounts: try Self.names(canaryAccounts.map { [$0] } ?? []).map { try AccountName($0) },
            exclude: try Self.names(exclude).map { try AccountName($0) }, rollbackTo: rollbackTo)
        for try await event in try await global.connect().migrate(all ? .all : .accounts(accounts), rollout: rollout) {
            switch event {
            case .account(let entry):
                if global.json {
                    Output.json(entry.parameters)
                    continue
                }
                if case .failed = entry.outcome, !entry.interrupted { failures.append(entry) }
                if let of = entry.of { total = Int64(of) }
                done += 1
                let shown = !all || entry.result == "failed"
                if shown {
                    progress.clear()
                    print(Self.describe(entry))
                    Output.flush()
                }
                progress.update(done: done, total: total, detail: all ? "" : entry.account, paced: all, force: shown)
            case .summary(let last):
                summary = last
            }
        }
        progress.clear()
        guard let summary else { return }
        // The accounts that really failed, apart from the migrations a reload interrupted.
        let (failed, interrupted, skipped) = (summary.failed - summary.interrupted, summary.interrupted, summary.skipped)
        if global.json {
            Output.json(summary.parameters)
        } else {
            let count = summary.count
            print(
                "\(count) account\(count == 1 ? "" : "s"): \(summary.migrated) migrated, "
                    + (summary.created > 0 ? "\(summary.created) created, " : "")
                    + (summary.restored > 0 ? "\(summary.restored) restored, " : "")
                    + "\(summary.current) current, \(failed) failed" + (interrupted > 0 ? ", \(interrupted) interrupted" : "")
                    + (skipped > 0 ? ", \(skipped) skipped" : ""))
            if let stopped = summary.stopped { print(Self.explain(stopped, rollout, summary)) }
            if !failures.isEmpty { Self.failureTable(failures).print() }
        }
        if failed > 0 || interrupted > 0 || skipped > 0 || summary.stopped == .withdrawn {
            throw ClientError.failed(
                [summary.stopped == .withdrawn
                    ? (rollbackTo != nil
                        ? "a reload put bundle version \(Output.text(summary.bundleVersion)) in force during the rollback"
                        : "a reload withdrew bundle version \(Output.text(summary.withdrawnVersion)) during the rollout") : nil,
                 failed > 0 ? "\(failed) account\(failed == 1 ? "" : "s") failed to migrate" : nil,
                 interrupted > 0 ? "\(interrupted) interrupted (rolled back, each at its old version)" : nil,
                 skipped > 0 ? "\(skipped) skipped" : nil].compactMap { $0 }.joined(separator: ", "))
        }
    }

    /// Why the rollout stopped, and what to do next.
    static func explain(_ stopped: MigrateSummary.Stop, _ rollout: MigrateRollout, _ summary: MigrateSummary) -> String {
        switch stopped {
        case .withdrawn where rollout.rollbackTo != nil:
            "stopped: a reload put bundle version \(Output.text(summary.bundleVersion)) in force while the rollback to version \(rollout.rollbackTo ?? 0) ran; "
                + "the accounts not begun were skipped, and those it restored will be migrated again at their next open. "
                + "To roll back, point schema.dir at the version \(rollout.rollbackTo ?? 0) bundle, reload, and run the same command again"
        case .withdrawn:
            "stopped: a reload withdrew bundle version \(Output.text(summary.withdrawnVersion)) while the rollout ran (the bundle in force is version \(Output.text(summary.bundleVersion))); "
                + "the migrations it was running were rolled back whole (failed, each at its old version with all its rows) and the accounts not begun were skipped. "
                + "If the release was withdrawn on purpose, roll back the accounts it migrated (accountctl migrate --all --rollback-to \(Output.text(summary.bundleVersion))); "
                + "else run the same command again to bring them to the bundle now in force"
        case .canary:
            "stopped after the canary of \(rollout.canaryAccounts.isEmpty ? rollout.canary ?? 0 : rollout.canaryAccounts.count): an account of it failed; fix the cause and run the same command again"
        case .maxFailures:
            "stopped after \(rollout.maxFailures ?? 0) failure\(rollout.maxFailures == 1 ? "" : "s") (--max-failures); fix the cause and run the same command again"
        }
    }

    /// The failures grouped by error: how many, and the first few accounts of each.
    static func failureTable(_ failures: [MigrateResult]) -> Table {
        var byError: [String: [String]] = [:]
        var order: [String] = []
        for entry in failures {
            guard case .failed(let error, _) = entry.outcome else { continue }
            let name = error.isEmpty ? "unknown" : ErrorName(rawValue: error).shortName
            if byError[name] == nil { order.append(name) }
            byError[name, default: []].append(entry.account)
        }
        var table = Table(headers: ["ERROR", "ACCOUNTS", "FOR EXAMPLE"], rightAligned: [1])
        for name in order.sorted(by: { (byError[$0]!.count, $1) > (byError[$1]!.count, $0) }) {
            let accounts = byError[name]!
            table.rows.append([name, String(accounts.count), accounts.prefix(3).joined(separator: ", ") + (accounts.count > 3 ? ", ..." : "")])
        }
        return table
    }

    /// Why an account failed: `error` is either the words, or an error name with the
    /// words in `message`.
    static func failure(error: String, message: String?) -> String {
        guard !error.isEmpty else { return message ?? "no reason given" }
        let isName = !error.contains(" ") && error.contains(".")
        switch (isName, message) {
        case (true, let message?): return "\(ErrorName(rawValue: error).shortName): \(message)"
        case (true, nil): return ErrorName(rawValue: error).shortName
        case (false, let message?): return "\(error): \(message)"
        case (false, nil): return error
        }
    }

    /// One account's outcome on a line: `migrated  alice  3 -> 7`, `failed  bob: why`,
    /// `interrupted  carol: why` for a migration a reload withdrawing the bundle stopped.
    static func describe(_ entry: MigrateResult) -> String {
        var line = Output.pad(entry.interrupted ? "interrupted" : entry.result, to: 8) + "  " + entry.account
        switch entry.outcome {
        case .done("migrated", let fromVersion, let version), .done("restored", let fromVersion, let version):
            line += "  version \(Output.text(fromVersion)) -> \(version)"
        case .done(_, _, let version):
            line += "  version \(version)"
        case .failed(let error, let message):
            line += ": " + Self.failure(error: error, message: message)
        case .skipped:
            break
        }
        return line
    }
}
