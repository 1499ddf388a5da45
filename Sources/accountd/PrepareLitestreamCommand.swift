import AccountdCore
import AccountdDaemon
import AccountdProtocol
import ArgumentParser
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `accountd prepare-litestream`: run by the `accountd-litestream` unit before Litestream
/// starts (`ExecStartPre=`), so that a changed replica gets every database
/// (``LitestreamStateReset``).
struct PrepareLitestreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare-litestream",
        abstract: "Reset Litestream's local state when its replica changed; run before Litestream starts.",
        discussion: """
            Reads the Litestream configuration accountd wrote (the file the accountd-litestream unit \
            gives Litestream) and compares its replica's store with the one recorded in the data root \
            (litestream-replica). When they differ, it removes Litestream's local state \
            (accounts/.<account>.sqlite-litestream/, .device.sqlite-litestream/: only Litestream's \
            bookkeeping, never data), so that Litestream ships a full copy of every database to the new \
            replica, and records the new store. Without a record, existing state is reset once. \
            Refused while Litestream answers on the configuration's control socket. The \
            accountd-litestream unit runs it as ExecStartPre=; exit status 1 when it failed (the unit \
            then does not start Litestream).
            """)

    @Option(name: .long, help: "Litestream's configuration as accountd writes it (replication.litestream.config).")
    var litestreamConfig: String = "/run/accountd/litestream.yml"

    func run() throws {
        umask(0o077)
        do {
            let facts = try LitestreamConfigFacts.read(litestreamConfig)
            // A data root the daemon has not made is not made here (hostile33e #5).
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: facts.dataRoot + "/accounts", isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError(
                    "\(litestreamConfig) names the data root \(facts.dataRoot), which has no accounts/ folder: it is not a data root accountd has made, "
                        + "and nothing was created. Start accountd first (it writes this configuration), or check replication.litestream.config")
            }
            // The data root as the daemon opens it (its own path may be a link, as the operator chose).
            let reset = LitestreamStateReset(root: try DataRoot(facts.dataRoot))
            let store = ReplicaAddress.storeIdentity(facts.replica)
            if try reset.needsReset(for: facts.replica), let socket = facts.socket, Self.answers(socket) {
                throw ValidationError(
                    "Litestream is running on \(litestreamConfig) (its control socket \(socket) answers): its local state can be reset "
                        + "only while it is stopped, and nothing was changed. Restart it with 'systemctl restart accountd-litestream', which runs this first")
            }
            switch try reset.run(for: facts.replica) {
            case .kept:
                print("accountd: Litestream's local state is the replica \(store)'s: nothing to reset")
            case .recorded:
                print("accountd: no Litestream state yet; recorded the replica \(store)")
            case .reset(let previous, let folders):
                print(
                    "accountd: the replica is now \(store) (it was \(previous ?? "not recorded")): removed Litestream's local state "
                        + "(\(folders) folder(s)); Litestream ships a full copy of every database to the new replica")
            }
        } catch {
            FileHandle.standardError.write(Data("accountd: prepare-litestream: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Whether something accepts connections on the Unix socket at `path` (a socket file a
    /// stopped Litestream left refuses them).
    static func answers(_ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0
    }
}
