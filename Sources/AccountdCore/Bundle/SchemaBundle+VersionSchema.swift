import GRDB

extension SchemaBundle {
    /// The schema a file at `version` must have: the target schema at the target version;
    /// for a chain of migrations, what its first `version` migrations build on an empty
    /// database (built here, in memory: the chain was checked to end when the bundle was
    /// loaded). nil when the bundle does not know that version's schema (a declarative
    /// bundle below its version, or a version outside the chain).
    public func schema(atVersion version: Int) throws -> NormalizedSchema? {
        if version == targetVersion { return targetSchema }
        guard declarative == nil, version >= 1, version < migrations.count else { return nil }
        let chain = try DatabaseQueue(configuration: Connections.configuration(foreignKeys: false, label: "bundle-chain-at-\(version)"))
        try chain.writeWithoutTransaction { db in
            for migration in migrations.prefix(version) {
                try ScriptRunner.run(migration.script, file: migration.relativePath, in: db)
            }
        }
        return try chain.read { try SchemaReader.read($0) }
    }
}
