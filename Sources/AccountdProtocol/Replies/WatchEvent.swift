/// A streamed reply of `Watch`: one thing that happened in the daemon.
public enum WatchEvent: ReplyModel {
    /// An account became the active one.
    case switched(Switched)
    /// A step of a migration began.
    case migration(Migration)
    /// A preference was set or deleted.
    case changed(Changed)
    /// A migration failed and was rolled back, or the active account could not be brought
    /// to the bundle: the file stays at `version`.
    case failed(Failed)
    /// `{"event":"missed","count":N}`: this watcher fell behind and lost the `count`
    /// oldest events before the ones that follow.
    case missed(count: Int)
    /// `{"event":"data", account, tables}`: an `Execute` committed changes to these tables
    /// of the account (sorted; triggers' tables included), so an app can refresh what it shows.
    case data(account: String, tables: [String])
    /// An event this client does not know, kept as it came.
    case other(JSONValue)

    /// `{"event":"switched", account, previous, action, version}`.
    public struct Switched: Hashable, Sendable {
        public var account: String
        public var previous: String?
        /// `opened`, `created` or `migrated`.
        public var action: String
        public var version: Int

        public init(account: String, previous: String?, action: String, version: Int) {
            self.account = account
            self.previous = previous
            self.action = action
            self.version = version
        }
    }

    /// `{"event":"migration", account, step, of, name, version}`.
    public struct Migration: Hashable, Sendable {
        public var account: String
        public var step: Int
        public var of: Int
        /// The step's migration, e.g. `0007_add_index`.
        public var name: String
        /// The version the step brings the file to.
        public var version: Int

        public init(account: String, step: Int, of: Int, name: String, version: Int) {
            self.account = account
            self.step = step
            self.of = of
            self.name = name
            self.version = version
        }
    }

    /// `{"event":"failed", account, error, message, version?}`.
    public struct Failed: Hashable, Sendable {
        public var account: String
        /// The error's wire name, e.g. `io.accountd.MigrationFailed`.
        public var error: String
        /// The error, in words: what happened and what to do.
        public var message: String
        /// The version the file stayed at, when known.
        public var version: Int?

        public init(account: String, error: String, message: String, version: Int?) {
            self.account = account
            self.error = error
            self.message = message
            self.version = version
        }
    }

    /// `{"event":"changed", namespace, key, scope, account?, value, deleted}`.
    public struct Changed: Hashable, Sendable {
        public var namespace: String
        public var key: String
        /// `account` or `global`.
        public var scope: String
        /// The account, for an account-scoped namespace.
        public var account: String?
        /// The new value; null when deleted.
        public var value: JSONValue
        public var deleted: Bool

        public init(namespace: String, key: String, scope: String, account: String?, value: JSONValue, deleted: Bool) {
            self.namespace = namespace
            self.key = key
            self.scope = scope
            self.account = account
            self.value = value
            self.deleted = deleted
        }
    }

    enum Key: String { case event, account, previous, action, version, step, of, name, namespace, key, scope, value, deleted, count, error, message, tables }
    enum Kind: String { case switched, migration, changed, failed, missed, data }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Watch")
        switch Kind(rawValue: try reader.string(Key.event)) {
        case .switched?:
            self = .switched(
                Switched(
                    account: try reader.string(Key.account), previous: try reader.optionalString(Key.previous),
                    action: try reader.string(Key.action), version: try reader.int(Key.version)))
        case .migration?:
            self = .migration(
                Migration(
                    account: try reader.string(Key.account), step: try reader.int(Key.step), of: try reader.int(Key.of),
                    name: try reader.string(Key.name), version: try reader.int(Key.version)))
        case .changed?:
            self = .changed(
                Changed(
                    namespace: try reader.string(Key.namespace), key: try reader.string(Key.key), scope: try reader.string(Key.scope),
                    account: try reader.optionalString(Key.account), value: reader.raw(Key.value) ?? .null,
                    deleted: try reader.bool(Key.deleted)))
        case .failed?:
            self = .failed(
                Failed(
                    account: try reader.string(Key.account), error: try reader.string(Key.error), message: try reader.string(Key.message),
                    version: try reader.optionalInt(Key.version)))
        case .missed?:
            self = .missed(count: try reader.int(Key.count))
        case .data?:
            self = .data(account: try reader.string(Key.account), tables: try reader.strings(Key.tables))
        case nil:
            self = .other(parameters)
        }
    }

    /// The event's name: `switched`, `migration`, `changed`, `failed`, `missed`, `data`, or what an unknown one says.
    public var name: String {
        switch self {
        case .switched: Kind.switched.rawValue
        case .migration: Kind.migration.rawValue
        case .changed: Kind.changed.rawValue
        case .failed: Kind.failed.rawValue
        case .missed: Kind.missed.rawValue
        case .data: Kind.data.rawValue
        case .other(let parameters): parameters[Key.event.rawValue]?.stringValue ?? ""
        }
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        switch self {
        case .switched(let event):
            object.add(Key.event, .string(Kind.switched.rawValue))
            object.add(Key.account, .string(event.account))
            object.add(Key.previous, JSONValue(event.previous))
            object.add(Key.action, .string(event.action))
            object.add(Key.version, JSONValue(event.version))
        case .migration(let event):
            object.add(Key.event, .string(Kind.migration.rawValue))
            object.add(Key.account, .string(event.account))
            object.add(Key.step, JSONValue(event.step))
            object.add(Key.of, JSONValue(event.of))
            object.add(Key.name, .string(event.name))
            object.add(Key.version, JSONValue(event.version))
        case .changed(let event):
            object.add(Key.event, .string(Kind.changed.rawValue))
            object.add(Key.namespace, .string(event.namespace))
            object.add(Key.key, .string(event.key))
            object.add(Key.scope, .string(event.scope))
            object.addIfPresent(Key.account, event.account.map { .string($0) })
            object.add(Key.value, event.value)
            object.add(Key.deleted, .bool(event.deleted))
        case .failed(let event):
            object.add(Key.event, .string(Kind.failed.rawValue))
            object.add(Key.account, .string(event.account))
            object.add(Key.error, .string(event.error))
            object.add(Key.message, .string(event.message))
            object.add(Key.version, JSONValue(event.version))
        case .missed(let count):
            object.add(Key.event, .string(Kind.missed.rawValue))
            object.add(Key.count, JSONValue(count))
        case .data(let account, let tables):
            object.add(Key.event, .string(Kind.data.rawValue))
            object.add(Key.account, .string(account))
            object.add(Key.tables, .array(tables.map { .string($0) }))
        case .other(let parameters):
            return parameters
        }
        return object.value
    }
}
