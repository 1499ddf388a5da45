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

    /// The replication settings in force at each attempt: a reload that mends the replica's
    /// URL or credentials is taken at the next attempt (hostile33f #2).
    let replication: ReplicationService
    let preferences: PreferenceService
    let pool: BlockingPool
    let logger: Logger

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
            let preferences = preferences
            guard let current = replication.settings.current else {
                // A reload turned replication off: there is no replica an empty file could shadow.
                do {
                    try await pool.run { try preferences.openDevice() }
                    logger.notice("replication is off since a reload: device.sqlite is made here; device namespaces are served")
                    return
                } catch {
                    logger.warning("device.sqlite could not be made (attempt \(attempt)): \(error); next attempt in \(Int(Self.retrySeconds)) s")
                    continue
                }
            }
            let shown = current.replica.redact(current.replica.device)
            do {
                let pull = DevicePull(root: replication.root, replica: current.replica, litestream: current.litestream(runs: replication.runs))
                let outcome = try await pull.pullIfMissing(on: pool)
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
