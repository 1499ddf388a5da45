/// The reply to `Metrics`: the daemon's metrics in Prometheus text format.
///
/// The text is what a Prometheus server scrapes and what node_exporter's textfile
/// collector reads, so `accountctl metrics` prints it as it is.
///
/// ```swift
/// let text = try await client.metrics()
/// ```
public struct MetricsReply: ReplyModel {
    enum Key: String { case text }

    /// The metrics, in the Prometheus text exposition format (version 0.0.4).
    public var text: String

    public init(text: String) { self.text = text }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        text = try ReplyReader(parameters, model: "Metrics").string(Key.text)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.text, .string(text))
        return object.value
    }
}
