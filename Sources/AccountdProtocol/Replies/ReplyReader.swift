/// Reads the typed fields of one reply's parameters, failing with a ``ReplyDecodingError``
/// that names the model and the key.
///
/// A key that is missing and a key that is null both read as nil through the optional
/// accessors; the required ones refuse both.
struct ReplyReader {
    /// The model's name, for errors.
    let model: String
    /// The key path of this object inside the reply, for errors about nested keys.
    let path: String
    private let value: JSONValue

    /// A reader over `parameters`, which must be an object.
    init(_ parameters: JSONValue, model: String, path: String = "") throws(ReplyDecodingError) {
        guard case .object = parameters else {
            throw ReplyDecodingError(model: model, key: path.isEmpty ? "parameters" : path, expected: "an object", found: parameters.typeName)
        }
        self.model = model
        self.path = path
        self.value = parameters
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private func fail(_ key: String, _ expected: String, _ found: JSONValue?) -> ReplyDecodingError {
        ReplyDecodingError(model: model, key: name(key), expected: expected, found: found?.typeName)
    }

    /// The raw value of `key`, or nil when missing.
    func raw<Key: RawRepresentable<String>>(_ key: Key) -> JSONValue? { value[key.rawValue] }

    /// Whether `key` is present (null counts as present).
    func has<Key: RawRepresentable<String>>(_ key: Key) -> Bool { value[key.rawValue] != nil }

    func string<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> String {
        guard case .string(let text)? = value[key.rawValue] else { throw fail(key.rawValue, "a string", value[key.rawValue]) }
        return text
    }

    func optionalString<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> String? {
        switch value[key.rawValue] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw fail(key.rawValue, "a string or null", other)
        }
    }

    func bool<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Bool {
        guard case .bool(let flag)? = value[key.rawValue] else { throw fail(key.rawValue, "a boolean", value[key.rawValue]) }
        return flag
    }

    func optionalBool<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Bool? {
        switch value[key.rawValue] {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case let other?: throw fail(key.rawValue, "a boolean or null", other)
        }
    }

    func int64<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Int64 {
        guard case .int(let number)? = value[key.rawValue] else { throw fail(key.rawValue, "an integer", value[key.rawValue]) }
        return number
    }

    func int<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Int {
        Int(try int64(key))
    }

    func optionalInt<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Int? {
        switch value[key.rawValue] {
        case nil, .null?: return nil
        case .int(let number)?: return Int(number)
        case let other?: throw fail(key.rawValue, "an integer or null", other)
        }
    }

    func double<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> Double {
        switch value[key.rawValue] {
        case .int(let number)?: return Double(number)
        case .double(let number)?: return number
        case let other: throw fail(key.rawValue, "a number", other)
        }
    }

    func strings<Key: RawRepresentable<String>>(_ key: Key) throws(ReplyDecodingError) -> [String] {
        guard case .array(let items)? = value[key.rawValue] else { throw fail(key.rawValue, "an array of strings", value[key.rawValue]) }
        var out: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw fail(key.rawValue, "an array of strings", item) }
            out.append(text)
        }
        return out
    }

    /// A nested object decoded as `Model`.
    func object<Key: RawRepresentable<String>, Model>(
        _ key: Key, _ decode: (ReplyReader) throws(ReplyDecodingError) -> Model
    ) throws(ReplyDecodingError) -> Model {
        guard let nested = value[key.rawValue] else { throw fail(key.rawValue, "an object", nil) }
        return try decode(ReplyReader(nested, model: model, path: name(key.rawValue)))
    }

    /// A nested object decoded as `Model`, or nil when missing or null.
    func optionalObject<Key: RawRepresentable<String>, Model>(
        _ key: Key, _ decode: (ReplyReader) throws(ReplyDecodingError) -> Model
    ) throws(ReplyDecodingError) -> Model? {
        switch value[key.rawValue] {
        case nil, .null?: return nil
        case let nested?: return try decode(ReplyReader(nested, model: model, path: name(key.rawValue)))
        }
    }

    /// An array of objects, each decoded as `Model`.
    func array<Key: RawRepresentable<String>, Model>(
        _ key: Key, _ decode: (ReplyReader) throws(ReplyDecodingError) -> Model
    ) throws(ReplyDecodingError) -> [Model] {
        guard case .array(let items)? = value[key.rawValue] else { throw fail(key.rawValue, "an array", value[key.rawValue]) }
        var out: [Model] = []
        for (index, item) in items.enumerated() {
            out.append(try decode(ReplyReader(item, model: model, path: "\(name(key.rawValue))[\(index)]")))
        }
        return out
    }
}
