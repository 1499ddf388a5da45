/// A typed form of one reply's parameters, shared by the daemon and its clients.
///
/// The daemon encodes its replies with ``parameters``; a client decodes them with
/// ``init(parameters:)``. The key names live only in the model, so the two ends cannot
/// spell them differently. Encoding keeps the keys in their documented order, so a
/// decoded and re-encoded reply is the same JSON text.
public protocol ReplyModel: Hashable, Sendable {
    /// Decodes the model from a reply's parameters.
    ///
    /// - Throws: ``ReplyDecodingError`` naming the first missing or mistyped key.
    init(parameters: JSONValue) throws(ReplyDecodingError)

    /// The reply's parameters, as they go on the wire.
    var parameters: JSONValue { get }
}

/// Builds the parameters of a reply, keys in order, from a model's `Key` enum.
struct ReplyObject {
    private(set) var pairs: [(String, JSONValue)] = []

    /// Appends `key` with `value`.
    mutating func add<Key: RawRepresentable<String>>(_ key: Key, _ value: JSONValue) {
        pairs.append((key.rawValue, value))
    }

    /// Appends `key` only when `value` is not nil.
    mutating func addIfPresent<Key: RawRepresentable<String>>(_ key: Key, _ value: JSONValue?) {
        if let value { pairs.append((key.rawValue, value)) }
    }

    /// The object.
    var value: JSONValue { .object(pairs) }
}

extension JSONValue {
    /// An integer, or null.
    init(_ value: Int?) { self = value.map { .int(Int64($0)) } ?? .null }
}

extension Reply {
    /// A success reply carrying `model`.
    public init(_ model: some ReplyModel, continues: Bool = false) {
        self.init(parameters: model.parameters, continues: continues)
    }
}
