import AccountdCore
import AccountdProtocol
import Foundation
import Logging

/// The funnel every error goes through on its way to the wire.
///
/// Errors declare their own wire form (``WireError``: ``AccountdError``, ``ProtocolError``,
/// ``InvalidAccountName``, ``RefusedRequest``); the funnel only asks them. A core error
/// also leaves a log line naming the account, the operation and the error
/// (``log(_:method:logger:)``). Anything else is unexpected and goes out as `InternalError`
/// with a reference; its details are logged, never sent, but a full or failing disk is
/// named as such (never as corruption).
enum ErrorMapping {
    ///
    /// - Parameter account: the account the request acted on: every log line of its failure
    ///   names it (`account=`), also when the error itself does not.
    static func reply(for error: any Error, method: Method?, account: AccountName? = nil, logger: Logger) -> Reply {
        if let error = error as? AccountdError {
            // The log names the account; the reply stays as the error made it.
            var logged = error
            if logged.account == nil, let account { logged.account = account.rawValue }
            log(logged, method: method, logger: logger)
            return error.reply
        }
        if let error = error as? any WireError { return error.reply }
        let reference = String(UUID().uuidString.prefix(8)).lowercased()
        var metadata: Logger.Metadata = ["error": "\(error)"]
        if let account { metadata["account"] = "\(account)" }
        logger.error(
            "internal error \(reference) in \(method?.rawValue ?? "a request")\(account.map { " of account \($0)" } ?? ""): \(error)", metadata: metadata)
        if let disk = AccountdError.diskText(of: error) {
            // The disk's doing, not a bug: say so, so that nobody looks for corruption.
            return ProtocolError(
                .internalError, "\(method?.rawValue ?? "the request") failed: \(disk) (reference \(reference)); free space on the disk that holds the data root, then try again"
            ).reply
        }
        return ProtocolError(.internalError, "internal error (reference \(reference)); the details are in the daemon's log").reply
    }

    /// The log line of a failed operation: at `error` for what needs an operator (a failed
    /// migration, a storage failure, a damaged file, a refused bundle), else at `warning`;
    /// with the account, the operation and the error as metadata (journald fields under systemd).
    static func log(_ error: AccountdError, method: Method?, logger: Logger) {
        let operation = method?.rawValue ?? "request"
        var metadata: Logger.Metadata = ["operation": "\(operation)", "error": "\(error.wireName.rawValue)"]
        if let account = error.account { metadata["account"] = "\(account)" }
        let severe: Set<AccountdError.Kind> = [.migrationFailed, .storage, .accountCorrupt, .invalidBundle]
        let line: Logger.Message = "\(operation)\(error.account.map { " of account \($0)" } ?? "") failed: \(error.wireName.rawValue): \(error.message)"
        if severe.contains(error.kind) {
            logger.error(line, metadata: metadata)
        } else {
            logger.warning(line, metadata: metadata)
        }
    }
}
