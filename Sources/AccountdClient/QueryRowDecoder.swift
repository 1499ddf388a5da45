import AccountdProtocol

/// Decodes a ``QueryRow`` into a `Decodable` type: one keyed container, columns as keys.
struct QueryRowDecoder: Decoder {
    let row: QueryRow
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Columns<Key>(row: row))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [SQLValue].self, .init(codingPath: codingPath, debugDescription: "a row decodes as a keyed type, its columns as keys"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(
            SQLValue.self, .init(codingPath: codingPath, debugDescription: "a row decodes as a keyed type, its columns as keys"))
    }

    /// The row's columns as a keyed container.
    struct Columns<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: QueryRow
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { row[key.stringValue] != nil }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try T(from: Cell(value: try value(key), key: key))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw mismatch(key, "a nested type")
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try Cell(value: try value(key), key: key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { QueryRowDecoder(row: row) }
        func superDecoder(forKey key: Key) throws -> any Decoder { Cell(value: try value(key), key: key) }

        private func value(_ key: Key) throws -> SQLValue {
            guard let value = row[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "the result has no column \(key.stringValue)"))
            }
            return value
        }

        private func mismatch(_ key: Key, _ what: String) -> DecodingError {
            .typeMismatch(SQLValue.self, .init(codingPath: [key], debugDescription: "column \(key.stringValue) cannot hold \(what)"))
        }
    }

    /// One column's value, as a single value (or, for a blob, the bytes as an unkeyed container).
    struct Cell: Decoder, SingleValueDecodingContainer {
        let value: SQLValue
        let key: any CodingKey
        var codingPath: [any CodingKey] { [key] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
            throw mismatch("a keyed type")
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let bytes: [UInt8]
            switch value {
            case .blob(let b), .textBytes(let b): bytes = b
            default: throw mismatch("an array (only a blob, or text that is not UTF-8, decodes as [UInt8])")
            }
            return Bytes(bytes: bytes, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { value == .null }

        func decode(_ type: Bool.Type) throws -> Bool {
            guard case .integer(let i) = value else { throw mismatch("Bool") }
            return i != 0
        }

        func decode(_ type: String.Type) throws -> String {
            guard case .text(let s) = value else { throw mismatch("String") }
            return s
        }

        func decode(_ type: Double.Type) throws -> Double {
            switch value {
            case .real(let d): return d
            case .integer(let i): return Double(i)
            default: throw mismatch("Double")
            }
        }

        func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

        func decode(_ type: Int.Type) throws -> Int { try decodeInteger() }
        func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger() }
        func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger() }
        func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger() }
        func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger() }
        func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger() }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger() }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger() }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger() }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger() }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }

        private func decodeInteger<T: BinaryInteger>() throws -> T {
            guard case .integer(let i) = value, let exact = T(exactly: i) else { throw mismatch("\(T.self)") }
            return exact
        }

        private func mismatch(_ what: String) -> DecodingError {
            .typeMismatch(SQLValue.self, .init(codingPath: codingPath, debugDescription: "column \(key.stringValue) holds \(value), not \(what)"))
        }
    }

    /// A blob's bytes, one `UInt8` at a time.
    struct Bytes: UnkeyedDecodingContainer {
        let bytes: [UInt8]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { bytes.count }
        var isAtEnd: Bool { currentIndex >= bytes.count }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            guard !isAtEnd, let byte = bytes[currentIndex] as? T else {
                throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath, debugDescription: "a blob decodes only as [UInt8]"))
            }
            currentIndex += 1
            return byte
        }

        mutating func nestedContainer<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
            throw DecodingError.typeMismatch(K.self, .init(codingPath: codingPath, debugDescription: "a blob decodes only as [UInt8]"))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw DecodingError.typeMismatch([UInt8].self, .init(codingPath: codingPath, debugDescription: "a blob decodes only as [UInt8]"))
        }

        mutating func superDecoder() throws -> any Decoder {
            throw DecodingError.typeMismatch([UInt8].self, .init(codingPath: codingPath, debugDescription: "a blob decodes only as [UInt8]"))
        }
    }
}
