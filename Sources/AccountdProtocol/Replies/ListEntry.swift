/// One streamed reply of `List`: an account and its size, and with `details` its version and state.
public struct ListEntry: ReplyModel {
    /// What `List {details: true}` adds.
    public struct Details: Hashable, Sendable {
        /// The file's schema version, or nil when it cannot be read.
        public var version: Int?
        /// The account's state, as in `Status {account}`.
        public var state: String
        /// The disk the account takes, part by part; nil from a daemon that predates it.
        public var disk: DiskUseInfo?

        public init(version: Int?, state: String, disk: DiskUseInfo? = nil) {
            self.version = version
            self.state = state
            self.disk = disk
        }
    }

    enum Key: String { case account, sizeBytes, version, state }

    public var account: String
    /// The file's size, its WAL included.
    public var sizeBytes: Int64
    /// Version and state, when the request asked for details.
    public var details: Details?

    public init(account: String, sizeBytes: Int64, details: Details? = nil) {
        self.account = account
        self.sizeBytes = sizeBytes
        self.details = details
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "List")
        account = try reader.string(Key.account)
        sizeBytes = try reader.int64(Key.sizeBytes)
        details =
            reader.has(Key.state)
            ? Details(version: try reader.optionalInt(Key.version), state: try reader.string(Key.state), disk: try DiskUseInfo(reader)) : nil
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.account, .string(account))
        object.add(Key.sizeBytes, .int(sizeBytes))
        if let details {
            object.add(Key.version, JSONValue(details.version))
            object.add(Key.state, .string(details.state))
            details.disk?.add(to: &object)
        }
        return object.value
    }
}
