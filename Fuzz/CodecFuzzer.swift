// libFuzzer target over the protocol codec: the line framer, the request decoder
// (both forms), the dispatcher's parameter validation, the JSON parser and the reply
// decoder.
//
// Built by `make fuzz` with `swiftc -sanitize=fuzzer,address` together with the
// sources of AccountdProtocol (a pure module, so nothing else is needed). Besides
// "never crash", it checks round-trip properties that would catch silent corruption.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))

    // 1. The framer, fed in uneven pieces, with a small limit.
    var framer = LineFramer(maximumLineLength: 512)
    var offset = 0
    var piece = 1
    var lines: [[UInt8]] = []
    framing: while offset < bytes.count {
        let end = min(bytes.count, offset + piece)
        framer.append(bytes[offset..<end])
        offset = end
        piece = piece % 7 + 1
        while true {
            do {
                guard let line = try framer.nextLine() else { break }
                precondition(line.count <= 512, "the framer returned a line over its limit")
                precondition(!line.contains(0x0A), "a line contains a newline")
                lines.append(Array(line))
            } catch {
                break framing
            }
        }
    }

    // 2. Every line as a request: it decodes or fails with a ProtocolError, and a decoded
    //    request survives encoding and decoding again.
    for line in lines + [bytes] {
        do {
            guard let request = try Request.decode(line) else { continue }
            validate(request)
            let again = try Request.decode(Array(request.encoded().utf8))
            precondition(again?.method == request.method, "method changed on a round trip")
            precondition(
                JSONValue.object(again?.parameters.pairs ?? []) == JSONValue.object(request.parameters.pairs),
                "parameters changed on a round trip")
        } catch {
            _ = error.reply.encoded()
        }
    }

    // 3. JSON: whatever parses serialises to text that parses to the same value.
    if let value = try? JSONParser.parse(bytes) {
        let text = value.serialized()
        guard let again = try? JSONParser.parse(text) else { preconditionFailure("serialised JSON does not parse: \(text)") }
        precondition(again == value, "JSON changed on a round trip: \(text)")
    }

    // 4. Replies, as a client decodes them.
    _ = try? Reply.decode(bytes)
    return 0
}

/// What the dispatcher does with a decoded request before touching any account: reads
/// each of its method's parameters with the typed accessors, which must either return
/// or throw a ProtocolError with a reply, never crash.
func validate(_ request: Request) {
    let parameters = request.parameters
    for name in request.method.parameterNames {
        do {
            switch name {
            case "account": _ = try parameters.account()
            case "create", "details", "all": _ = try parameters.bool(name)
            case "accounts": _ = try parameters.stringArray(name)
            case "value": _ = parameters[name]?.serialized()
            default: _ = try parameters.string(name)
            }
        } catch {
            _ = error.reply.encoded()
        }
    }
    _ = request.method.requiresAdmin
    _ = request.method.streaming
}
