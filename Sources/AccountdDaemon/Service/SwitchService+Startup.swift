import AccountdCore
import AccountdProtocol
import Logging
import ServiceLifecycle

/// Opening the account saved in `state.json` at start-up, without holding start-up up.
extension SwitchService {
    /// The longest wait between two attempts to open a saved account that another process holds.
    static let openingRetryCap: Duration = .seconds(30)

    /// Opens the accounts saved in `state.json` (one per uid), each in a child task of this
    /// call's task group, and returns once every one opened or failed for good. The daemon runs
    /// it as a service of its own (``StartupOpener``) beside the sockets, so it listens while
    /// the accounts open; a graceful shutdown cancels the retries.
    ///
    /// While a uid's saved account is not open, its `Status` says `opening`. An account another
    /// process holds locked (`AccountBusy`) is tried again in the background, after 1 s, 2 s,
    /// 4 s ... up to ``openingRetryCap``, until it opens or a `Switch` by that uid makes an
    /// account active; any other failure ends the attempts, with no active account for that
    /// uid and its `Status` saying `idle`, with the reason as `problem`.
    /// ``DaemonEvent/startupSettled`` is published once every uid's first attempt ended
    /// (systemd's `READY=1` waits for it).
    func openSavedAccounts() async {
        let saved: [UInt32: AccountName]
        do {
            saved = try record.readAll()
        } catch {
            logger.error("\(error)", metadata: ["operation": "start-up", "error": "\(error)"])
            hub.publish(.startupSettled)
            return
        }
        guard !saved.isEmpty else {
            hub.publish(.startupSettled)
            return
        }
        state.withLock {
            $0.unsettled = saved.count
            for (uid, account) in saved { $0.opening[uid] = Opening(account: account, problem: nil) }
        }
        await withDiscardingTaskGroup { group in
            for (uid, account) in saved.sorted(by: { $0.key < $1.key }) {
                group.addTask { await self.keepOpening(account, for: uid) }
            }
        }
    }

    /// Counts one uid's first start-up attempt as ended; the last one publishes ``DaemonEvent/startupSettled``.
    private func settleOne() {
        let all = state.withLock { state -> Bool in
            state.unsettled -= 1
            return state.unsettled == 0
        }
        if all { hub.publish(.startupSettled) }
    }

    /// Tries to open `saved` for `uid` until it opens, fails for good, or is no longer wanted.
    private func keepOpening(_ saved: AccountName, for uid: UInt32) async {
        var delay: Duration = .seconds(1)
        var settled = false
        defer { if !settled { settleOne() } }
        while !Task.isCancelled, stillOpening(saved, for: uid) {
            do {
                let result = try await switchTo(saved, create: false, commit: .startup(uid: uid), progress: nil)
                if result.committed {
                    logger.info(
                        "restored the active account \(saved) of uid \(uid): \(result.outcome.action.rawValue) at version \(result.outcome.version)",
                        metadata: ["account": "\(saved)", "peer_uid": "\(uid)"])
                }
                return
            } catch let error as AccountdError where error.kind == .accountBusy {
                let problem = "the saved active account \(saved) is held by another process and is not open yet: \(error.message); trying again in \(delay)"
                logger.warning("\(problem)", metadata: ["account": "\(saved)", "operation": "start-up", "error": "\(error.wireName.rawValue)"])
                state.withLock { if $0.opening[uid]?.account == saved { $0.opening[uid]?.problem = problem } }
                if !settled {
                    settled = true
                    settleOne()
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, Self.openingRetryCap)
            } catch {
                let message = (error as? AccountdError)?.message ?? "\(error)"
                logger.error(
                    "the saved active account \(saved) of uid \(uid) could not be opened, starting with no active account for it: \(error)",
                    metadata: ["account": "\(saved)", "peer_uid": "\(uid)", "operation": "start-up", "error": "\(error)"])
                state.withLock {
                    guard $0.opening[uid]?.account == saved else { return }
                    $0.opening[uid] = nil
                    if $0.active[uid] == nil {
                        $0.failures[uid] = Failure(
                            account: saved, message: "the saved active account \(saved) could not be opened: \(message)",
                            tooNew: (error as? AccountdError)?.kind == .accountTooNew)
                    }
                }
                return
            }
        }
    }

    /// Whether start-up still waits for `saved`: no switch has made an account active for `uid` since.
    private func stillOpening(_ saved: AccountName, for uid: UInt32) -> Bool {
        state.withLock { $0.opening[uid]?.account == saved && $0.active[uid] == nil }
    }
}

/// The start-up opener as a service of the daemon's `ServiceGroup`: the task that opens the
/// saved active accounts (``SwitchService/openSavedAccounts()``) is the group's child, and
/// a graceful shutdown cancels its retries.
struct StartupOpener: Service {
    let switching: SwitchService

    func run() async throws {
        await cancelWhenGracefulShutdown { await switching.openSavedAccounts() }
    }
}
