import AccountdCore
import AccountdProtocol
import Logging

/// Opening the account saved in `state.json` at start-up, without holding start-up up.
extension SwitchService {
    /// The longest wait between two attempts to open a saved account that another process holds.
    static let openingRetryCap: Duration = .seconds(30)

    /// Starts opening the account saved in `state.json` and returns at once, so the daemon
    /// listens while it opens.
    ///
    /// While the saved account is not open, `Status` says `opening`. An account another
    /// process holds locked (`AccountBusy`) is tried again in the background, after 1 s, 2 s,
    /// 4 s ... up to ``openingRetryCap``, until it opens or a `Switch` makes an account
    /// active; any other failure ends the attempts, with no active account and `Status`
    /// saying `idle`, with the reason as `problem`. ``DaemonEvent/startupSettled`` is published once the first attempt
    /// ends (systemd's `READY=1` waits for it).
    func openSavedAccount() {
        let saved: AccountName?
        do {
            saved = try record.read()
        } catch {
            logger.error("\(error)", metadata: ["operation": "start-up", "error": "\(error)"])
            hub.publish(.startupSettled)
            return
        }
        guard let saved else {
            hub.publish(.startupSettled)
            return
        }
        state.withLock { $0.opening = Opening(account: saved, problem: nil) }
        Task { await self.keepOpening(saved) }
    }

    /// Tries to open `saved` until it opens, fails for good, or is no longer wanted.
    private func keepOpening(_ saved: AccountName) async {
        var delay: Duration = .seconds(1)
        var settled = false
        defer { if !settled { hub.publish(.startupSettled) } }
        while !Task.isCancelled, stillOpening(saved) {
            do {
                let result = try await switchTo(saved, create: false, commit: .startup, progress: nil)
                if result.committed {
                    logger.info(
                        "restored active account \(saved): \(result.outcome.action.rawValue) at version \(result.outcome.version)",
                        metadata: ["account": "\(saved)"])
                }
                return
            } catch let error as AccountdError where error.kind == .accountBusy {
                let problem = "the saved active account \(saved) is held by another process and is not open yet: \(error.message); trying again in \(delay)"
                logger.warning("\(problem)", metadata: ["account": "\(saved)", "operation": "start-up", "error": "\(error.wireName.rawValue)"])
                state.withLock { if $0.opening?.account == saved { $0.opening?.problem = problem } }
                if !settled {
                    settled = true
                    hub.publish(.startupSettled)
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, Self.openingRetryCap)
            } catch {
                let message = (error as? AccountdError)?.message ?? "\(error)"
                logger.error(
                    "the saved active account \(saved) could not be opened, starting with no active account: \(error)",
                    metadata: ["account": "\(saved)", "operation": "start-up", "error": "\(error)"])
                state.withLock {
                    guard $0.opening?.account == saved else { return }
                    $0.opening = nil
                    if $0.active == nil {
                        $0.failure = Failure(
                            account: saved, message: "the saved active account \(saved) could not be opened: \(message)",
                            tooNew: (error as? AccountdError)?.kind == .accountTooNew)
                    }
                }
                return
            }
        }
    }

    /// Whether start-up still waits for `saved`: no switch has made an account active since.
    private func stillOpening(_ saved: AccountName) -> Bool {
        state.withLock { $0.opening?.account == saved && $0.active == nil }
    }
}
