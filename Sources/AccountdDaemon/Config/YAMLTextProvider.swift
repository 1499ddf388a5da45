import Configuration
import Yams

/// The config file's settings for swift-configuration, from YAML text this daemon prepared:
/// the file without its `access` section.
///
/// swift-configuration reads arrays of scalars only, and `access.grants` is a list of
/// mappings, read by ``GrantConfig`` with Yams; the rest of the file is given to
/// swift-configuration's own YAML snapshot, parsed from the same text, so every other
/// setting is read exactly as before.
struct YAMLTextProvider: ConfigProvider {
    private let yaml: YAMLSnapshot

    /// - Parameters:
    ///   - text: the YAML to read.
    ///   - name: the provider's name in swift-configuration's errors: the file's path.
    init(text: String, name: String) throws {
        let bytes = Array(text.utf8)
        yaml = try YAMLSnapshot(data: bytes.span.bytes, providerName: name, parsingOptions: .default)
    }

    /// `text`, a YAML mapping, without its `access` section; nil when it has none.
    static func withoutAccess(_ root: Node?) throws -> String? {
        guard let mapping = root?.mapping, mapping.keys.contains(where: { $0.string == "access" }) else { return nil }
        var kept = Node.Mapping([])
        for (key, value) in mapping where key.string != "access" { kept[key] = value }
        return try Yams.serialize(node: .mapping(kept))
    }

    var providerName: String { yaml.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try yaml.value(forKey: key, type: type)
    }

    func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey, type: ConfigType,
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { yaml }

    func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}
