import Testing
@testable import AccountdProtocol

// Small helpers shared by the AccountdProtocol test files.

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `bytes` decoded as UTF-8, for readable comparisons; nil stays nil.
func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

extension ProtocolError {
    /// The value of the fact `name`, or nil.
    func fact(_ name: String) -> JSONValue? { facts.first { $0.0 == name }?.1 }
}

extension Parameters {
    /// The parameter names, in order.
    var names: [String] { pairs.map(\.0) }
}

/// Decodes `line` as a request and returns the ``ProtocolError`` it throws, recording
/// an issue when it does not throw one.
@discardableResult
func requestFailure(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> ProtocolError? {
    #expect(throws: ProtocolError.self, sourceLocation: sourceLocation) { try Request.decode(line) }
}

/// Same, for a line given as text.
@discardableResult
func requestFailure(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> ProtocolError? {
    requestFailure(bytes(line), sourceLocation: sourceLocation)
}

/// Decodes `line`, recording an issue when it throws or is blank.
func decodedRequest(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> Request? {
    do {
        let request = try Request.decode(bytes(line))
        #expect(request != nil, "a blank-line nil for \(line.debugDescription)", sourceLocation: sourceLocation)
        return request
    } catch {
        Issue.record("\(line.debugDescription) was refused: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Parses JSON text, recording an issue when it is refused.
func parsed(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue? {
    do {
        return try JSONParser.parse(json)
    } catch {
        Issue.record("\(json.debugDescription) was refused: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Whether two JSON values are the same case with the same contents, down to the sign of
/// a zero (which `==` on `Double` ignores).
func identical(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    return a == b && a.serialized() == b.serialized()
}
