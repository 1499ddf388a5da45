/// A streamed reply of `Switch` with `more: true`: one migration step has begun.
public struct SwitchProgress: ReplyModel {
    enum Key: String { case step, of, name }

    /// The step, from 1.
    public var step: Int
    /// How many steps the migration has.
    public var of: Int
    /// The step's migration, e.g. `0007_add_index`.
    public var name: String

    public init(step: Int, of: Int, name: String) {
        self.step = step
        self.of = of
        self.name = name
    }

    public init(parameters: JSONValue) throws(ReplyDecodingError) {
        let reader = try ReplyReader(parameters, model: "Switch progress")
        step = try reader.int(Key.step)
        of = try reader.int(Key.of)
        name = try reader.string(Key.name)
    }

    public var parameters: JSONValue {
        var object = ReplyObject()
        object.add(Key.step, JSONValue(step))
        object.add(Key.of, JSONValue(of))
        object.add(Key.name, .string(name))
        return object.value
    }
}
