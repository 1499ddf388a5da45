import AccountdCore
import Foundation
import Logging

/// A fresh host started while the replica could not be asked whether it holds
/// `device.sqlite`: rather than make an empty one, which Litestream would push over the
/// replica's copy (every device-wide preference lost from its newest state), the daemon
/// holds device namespaces back (``PreferenceService/isDeviceHeldBack``) and asks the replica
/// again every ``retrySeconds``. Once it answers, `device.sqlite` is pulled (or, when the
/// replica holds none, made), and device namespaces are served. Accounts are served all along.
struct DeviceRecovery: Sendable {
    /// How long between two attempts.
    static let retrySeconds: Double = 10

    let pull: DevicePull
    let preferences: PreferenceService
    let pool: BlockingPool
    let logger: Logger
    /// The replica's `device.sqlite`, masked, for the log.
    let shown: String

    /// Asks the replica until it answers, then opens `device.sqlite`; ends early when the
    /// task is cancelled (the daemon stops).
    func run() async {
        var attempt = 1
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: .seconds(Self.retrySeconds))
            } catch {
                return
            }
            attempt += 1
            do {
                let outcome = try await pull.pullIfMissing(on: pool)
                let preferences = preferences
                try await pool.run { try preferences.openDevice() }
                switch outcome {
                case .pulled(let txid):
                    logger.notice("device.sqlite pulled from the replica \(shown) (Litestream txid \(txid ?? "unknown")) at attempt \(attempt); device namespaces are served")
                case .notInReplica:
                    logger.notice("the replica \(shown) holds no device.sqlite (asked at attempt \(attempt)): a new one is made; device namespaces are served")
                case .present:
                    logger.notice("device.sqlite is here; device namespaces are served")
                }
                return
            } catch {
                logger.warning(
                    "device.sqlite is still missing: the replica \(shown) could not be asked (attempt \(attempt)): \(error); device namespaces stay refused, next attempt in \(Int(Self.retrySeconds)) s")
            }
        }
    }
}
