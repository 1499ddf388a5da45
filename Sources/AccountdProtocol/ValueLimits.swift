/// The limits on a preference value, applied alike to every form of `Set` (inline, JSON,
/// varlink), so that every value accepted can be stored and read back exactly.
///
/// - **Nesting.** A client reads a reply with ``JSONParser``, which stops at
///   ``JSONParser/maximumDepth`` levels. Every message that carries a value wraps it in
///   ``envelopeDepth`` levels: the message object and its `parameters`
///   (`{"parameters":{"value":V}}` for `Get`, `{"parameters":{"event":"changed",…,"value":V}}`
///   for `Watch`, and `{"method":…,"parameters":{…,"value":V}}` for a JSON `Set`). So a value
///   may nest at most ``maximumDepth`` levels.
/// - **Integers** are kept exactly from `Int64.min` to `Int64.max`; an integer literal outside
///   that range is refused rather than rounded. Reals (with a fraction or an exponent) are
///   64-bit floating point, of any magnitude up to about 1.8e308.
public enum ValueLimits {
    /// The levels a request or reply adds around a value: its object and its `parameters`.
    public static let envelopeDepth = 2

    /// How deeply a value's arrays and objects may nest.
    public static let maximumDepth = JSONParser.maximumDepth - envelopeDepth

    /// The `InvalidValue` refusal of a value that breaks a limit, from the parser's failure;
    /// nil for a failure that is plain bad JSON, which each form words itself.
    ///
    /// A value nested too deeply is reported the same way whether the parser stopped at the
    /// value's own limit (inline `set`) or at the whole request's (a JSON request, whose own
    /// two levels come first; there only a failure whose ``JSONParser/Failure/path`` is
    /// `["parameters", "value"]` is the value's), so both forms refuse the same values with
    /// the same error.
    public static func refusal(_ failure: JSONParser.Failure) -> ProtocolError? {
        switch failure.kind {
        case .syntax:
            return nil
        case .tooDeep:
            return ProtocolError(
                .invalidValue,
                "the value nests more than \(maximumDepth) levels deep; a value may nest at most \(maximumDepth) levels, "
                    + "so that a reply carrying it stays within the \(JSONParser.maximumDepth) levels a client reads",
                facts: [("parameter", "value"), ("limit", JSONValue(maximumDepth))])
        case .integerOutOfRange:
            return ProtocolError(.invalidValue, failure.reason, facts: [("parameter", "value")])
        }
    }
}
