/// The reply to `org.varlink.service.GetInfo`: which service answers on the varlink
/// socket, and the interfaces it serves.
public struct VarlinkInfo: ReplyModel {
    enum Key: String { case vendor, product, version, url, interfaces }

    /// Who makes the service: `accountd`.
    public var vendor: String
    /// The product: `accountd`.
    public var product: String
    /// The daemon's version.
    public var version: String
    /// Where to read about it.
    public var url: String
    /// The interfaces served: `org.varlink.service` and `io.accountd`.
    public var interfaces: [String]

    public init(
        vendor: String = "accountd", product: String = "accountd", version: String,
        url: String = "https://github.com/accountd/accountd", interfaces: [String] = VarlinkCall.interfaces
    ) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        self.interfaces = interfaces
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "GetInfo")
        vendor = try reader.string(Key.vendor)
        product = try reader.string(Key.product)
        version = try reader.string(Key.version)
        url = try reader.string(Key.url)
        interfaces = try reader.strings(Key.interfaces)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.vendor, .string(vendor))
        object.add(Key.product, .string(product))
        object.add(Key.version, .string(version))
        object.add(Key.url, .string(url))
        object.add(Key.interfaces, .array(interfaces.map { .string($0) }))
        return object.value
    }
}
