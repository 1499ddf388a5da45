import AccountdCore
import AccountdProtocol
import Foundation

/// The bundles, and the accounts every fresh data root starts with besides what a new
/// daemon has, so that inputs reach the paths a protocol client alone cannot set up:
///
/// - `legacy`, `legacy2`: version 1, with awkward rows (SQL-looking text, a NUL, invalid
///   UTF-8, a blob in a text column), so that Switch and Migrate migrate, snapshots exist
///   to restore, and exports have something to escape;
/// - `future`: version 4, which this bundle may not open (`AccountTooNew`);
/// - `compatible`: version 4, declared readable by version 3 (opened as compatible);
/// - `corrupt`: not SQLite at all; `truncated`: the first half of a sound file.
struct Fixtures {
    /// The bundle the daemon serves.
    let bundle: SchemaBundle
    private let legacy: SchemaBundle
    private let future: SchemaBundle
    private let compatible: SchemaBundle

    /// What the version-1 bundle's `on-open.sql` puts in `user_info`.
    static let legacyRows = """
        INSERT OR REPLACE INTO user_info (user_id, user_name) VALUES
          (1, 'ann'),
          (2, 'Robert''); DROP TABLE user_info; --'),
          (3, CAST(X'610062' AS TEXT)),
          (4, X'00FF7F'),
          (5, CAST(X'C328FF' AS TEXT)),
          (6, 'é' || char(13) || char(10) || '"quoted" \\ back'),
          (7, NULL),
          (9223372036854775807, 'SELECT * FROM user_info');

        """

    /// Loads the bundle at `schema` and writes the other three under `directory`.
    init(schema: String, directory: String) throws {
        bundle = try SchemaBundle.load(from: schema)
        let count = bundle.targetVersion
        let table = "CREATE TABLE future_data (id INTEGER PRIMARY KEY, note TEXT);\n"
        legacy = try Self.derive(bundle, at: directory + "/bundle-v1", keeping: 1, onOpen: Self.legacyRows)
        future = try Self.derive(bundle, at: directory + "/bundle-future", keeping: count, adding: table)
        compatible = try Self.derive(
            bundle, at: directory + "/bundle-compatible", keeping: count, adding: "-- accountd: readable-by \(count)\n" + table)
    }

    /// A bundle with the first `count` migrations of `bundle`, plus `migration` after them and `on-open.sql`.
    private static func derive(
        _ bundle: SchemaBundle, at folder: String, keeping count: Int, adding migration: String? = nil, onOpen: String? = nil
    ) throws -> SchemaBundle {
        let files = FileManager.default
        let source = bundle.directory + "/migrations"
        let names = try files.contentsOfDirectory(atPath: source).filter { $0.hasSuffix(".sql") }.sorted()
        try files.createDirectory(atPath: folder + "/migrations", withIntermediateDirectories: true)
        for name in names.prefix(count) {
            try files.copyItem(atPath: source + "/" + name, toPath: folder + "/migrations/" + name)
        }
        if let migration {
            let name = String(format: "%04d_future.sql", count + 1)
            try migration.write(toFile: folder + "/migrations/" + name, atomically: true, encoding: .utf8)
        }
        if let onOpen { try onOpen.write(toFile: folder + "/on-open.sql", atomically: true, encoding: .utf8) }
        return try SchemaBundle.load(from: folder)
    }

    /// Creates the accounts on an empty data root.
    func populate(_ root: DataRoot, options: AccountStore.Options) throws {
        for (bundle, names) in [(legacy, ["legacy", "legacy2"]), (future, ["future"]), (compatible, ["compatible"])] {
            let store = AccountStore(root: root, bundle: bundle, options: options)
            for name in names { _ = try store.open(AccountName(name), create: true) }
        }
        let garbage = Data(String(repeating: "this is not an SQLite database\n", count: 200).utf8)
        try garbage.write(to: URL(fileURLWithPath: root.accountPath(try AccountName("corrupt"))))
        let sound = try Data(contentsOf: URL(fileURLWithPath: root.accountPath(try AccountName("legacy"))))
        try sound.prefix(sound.count / 2).write(to: URL(fileURLWithPath: root.accountPath(try AccountName("truncated"))))
    }
}
