/// The reply to `Info`: which daemon is on the socket.
///
/// ```swift
/// let info = try await client.info()
/// print(info.version, info.bundle.version)
/// ```
public struct InfoReply: ReplyModel {
    /// The schema bundle the daemon serves.
    public struct Bundle: Hashable, Sendable {
        /// The bundle's target schema version.
        public var version: Int
        /// A digest of the bundle's files.
        public var fingerprint: String

        public init(version: Int, fingerprint: String) {
            self.version = version
            self.fingerprint = fingerprint
        }
    }

    enum Key: String { case product, version, `protocol`, pid, uptimeSeconds, dataRoot, bundle, fingerprint }

    /// Always `accountd`.
    public var product: String
    /// The daemon's version.
    public var version: String
    /// The protocol version, 1.
    public var protocolVersion: Int
    /// The daemon's process id.
    public var pid: Int
    /// Whole seconds since the daemon started.
    public var uptimeSeconds: Int
    /// The daemon's data root.
    public var dataRoot: String
    /// The schema bundle.
    public var bundle: Bundle

    public init(product: String = "accountd", version: String, protocolVersion: Int = 1, pid: Int, uptimeSeconds: Int, dataRoot: String, bundle: Bundle) {
        self.product = product
        self.version = version
        self.protocolVersion = protocolVersion
        self.pid = pid
        self.uptimeSeconds = uptimeSeconds
        self.dataRoot = dataRoot
        self.bundle = bundle
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Info")
        product = try reader.string(Key.product)
        version = try reader.string(Key.version)
        protocolVersion = try reader.int(Key.protocol)
        pid = try reader.int(Key.pid)
        uptimeSeconds = try reader.int(Key.uptimeSeconds)
        dataRoot = try reader.string(Key.dataRoot)
        bundle = try reader.object(Key.bundle) { bundle throws(ReplyDecodingError) in
            Bundle(version: try bundle.int(Key.version), fingerprint: try bundle.string(Key.fingerprint))
        }
    }

    public var parameters: JSONValue {
        var bundleObject = ReplyObject()
        bundleObject.add(Key.version, JSONValue(bundle.version))
        bundleObject.add(Key.fingerprint, .string(bundle.fingerprint))
        var object = ReplyObject()
        object.add(Key.product, .string(product))
        object.add(Key.version, .string(version))
        object.add(Key.protocol, JSONValue(protocolVersion))
        object.add(Key.pid, JSONValue(pid))
        object.add(Key.uptimeSeconds, JSONValue(uptimeSeconds))
        object.add(Key.dataRoot, .string(dataRoot))
        object.add(Key.bundle, bundleObject.value)
        return object.value
    }
}
