import Foundation

/// Writes schema bundles for tests.
public enum BundleFixture {
    /// Writes a bundle whose migrations are `steps`, in order, named `0001_step1.sql`, ...
    @discardableResult
    public static func write(
        at path: String, steps: [String], names: [String]? = nil, schema: String? = nil, onOpen: String? = nil
    ) throws -> String {
        let migrations = path + "/migrations"
        try FileManager.default.createDirectory(atPath: migrations, withIntermediateDirectories: true)
        for (index, sql) in steps.enumerated() {
            let name = names?[index] ?? "step\(index + 1)"
            try sql.write(toFile: migrations + "/" + String(format: "%04d_", index + 1) + name + ".sql", atomically: true, encoding: .utf8)
        }
        if let schema { try schema.write(toFile: path + "/schema.sql", atomically: true, encoding: .utf8) }
        if let onOpen { try onOpen.write(toFile: path + "/on-open.sql", atomically: true, encoding: .utf8) }
        return path
    }

    /// Writes a declarative bundle: `schema.sql` headed `-- accountd: declarative version N`, then `schema`.
    @discardableResult
    public static func writeDeclarative(at path: String, version: Int, schema: String, onOpen: String? = nil) throws -> String {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try ("-- accountd: declarative version \(version)\n" + schema).write(toFile: path + "/schema.sql", atomically: true, encoding: .utf8)
        if let onOpen { try onOpen.write(toFile: path + "/on-open.sql", atomically: true, encoding: .utf8) }
        return path
    }

    /// Copies the first `version` migrations of the bundle at `source` into a new bundle at `path`.
    public static func truncate(_ source: String, at version: Int, into path: String) throws -> String {
        let files = try FileManager.default.contentsOfDirectory(atPath: source + "/migrations")
            .filter { $0.hasSuffix(".sql") }.sorted()
        try FileManager.default.createDirectory(atPath: path + "/migrations", withIntermediateDirectories: true)
        for file in files.prefix(version) {
            try FileManager.default.copyItem(atPath: source + "/migrations/" + file, toPath: path + "/migrations/" + file)
        }
        return path
    }
}
