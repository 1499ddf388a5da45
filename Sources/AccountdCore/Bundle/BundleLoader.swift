import Foundation
import GRDB

/// Reads a bundle folder and runs every load-time check. See ``SchemaBundle``.
struct BundleLoader {
    var root: String
    /// Stops the check (the migrations run on an empty database, which a bundle's SQL may
    /// make endless): at SIGTERM, or when a newer reload supersedes this one.
    var interrupt = SQLiteInterrupt()

    func load() throws -> SchemaBundle {
        guard FileSystem.entry(at: root) == .directory else {
            throw AccountdError(.invalidBundle, "\(root) is not a folder", file: root)
        }
        if let declarative = try readDeclarative() { return try loadDeclarative(declarative) }
        let migrations = try readMigrations()
        var digestInput = migrations.map { "\($0.relativePath) \($0.sha256)" }

        let schemaScript = try readScript("schema.sql", digest: &digestInput)
        let onOpenScript = try readScript("on-open.sql", digest: &digestInput)
        let templatePath = root + "/template.sqlite"
        let hasTemplate = FileSystem.exists(templatePath)
        if hasTemplate {
            digestInput.append("template.sqlite \(Digest.sha256Hex(try Data(contentsOf: URL(fileURLWithPath: templatePath))))")
        }

        // The full chain is the reference: it is what every existing account goes through.
        let chain = try DatabaseQueue(configuration: Connections.configuration(foreignKeys: false, label: "bundle-chain"))
        var chainLocations: [String: String] = [:]
        try chain.writeWithoutTransaction { db in try interrupt.run(on: db) {
            var previous: [String: String] = [:]
            for migration in migrations {
                try run(migration.script, file: migration.relativePath, in: db)
                try Self.refuseReserved(db, file: migration.relativePath)
                let objects = try Self.objectSQL(db)
                for (key, sql) in objects where previous[key] != sql {
                    chainLocations[key] = Self.location(of: key, in: migration.script, file: migration.relativePath)
                }
                previous = objects
            }
            let reserved = try SchemaReader.reservedObjects(db)
            if !reserved.isEmpty {
                throw AccountdError(
                    .invalidBundle,
                    "the migrations create \(reserved.joined(separator: ", ")): names beginning with accountd_ are reserved for the daemon's own records")
            }
        } }
        let targetSchema = try chain.read { try SchemaReader.read($0) }

        if let schemaScript {
            let built = try DatabaseQueue(configuration: Connections.configuration(foreignKeys: false, label: "bundle-schema"))
            try built.writeWithoutTransaction { db in try interrupt.run(on: db) {
                let filtered = SQLScript(statements: schemaScript.statements.filter { !Self.createsInternalTable($0) })
                try run(filtered, file: "schema.sql", in: db)
                try Self.refuseReserved(db, file: "schema.sql")
            } }
            var locations: [String: String] = [:]
            for statement in schemaScript.statements {
                if let object = statement.createdObject {
                    locations["\(object.kind) \(object.name)"] = "schema.sql line \(statement.line)"
                }
            }
            try compare(targetSchema, try built.read { try SchemaReader.read($0) }, "schema.sql", chainLocations, locations)
        }

        if hasTemplate { try checkTemplate(templatePath, against: targetSchema, chainLocations) }

        if let onOpenScript { try checkOnOpen(onOpenScript, in: chain) }
        try chain.close()

        return SchemaBundle(
            directory: root, migrations: migrations, schemaScript: schemaScript,
            templatePath: hasTemplate ? templatePath : nil, onOpenScript: onOpenScript, targetSchema: targetSchema,
            fingerprint: Digest.sha256Hex(digestInput.joined(separator: "\n")))
    }

    /// Loads a declarative bundle: `schema.sql` is the target, run into an empty database.
    private func loadDeclarative(_ declarative: DeclarativeSchema) throws -> SchemaBundle {
        var digestInput = ["schema.sql \(declarative.sha256)"]
        let onOpenScript = try readScript("on-open.sql", digest: &digestInput)
        let templatePath = root + "/template.sqlite"
        let hasTemplate = FileSystem.exists(templatePath)
        if hasTemplate {
            digestInput.append("template.sqlite \(Digest.sha256Hex(try Data(contentsOf: URL(fileURLWithPath: templatePath))))")
        }
        // schema.sql ran when it was read (DeclarativeSchema.read), and its accountd_* names were refused there.
        let targetSchema = declarative.target.schema
        try declarative.checkDirectives(against: targetSchema)
        var locations: [String: String] = [:]
        for statement in declarative.script.statements {
            if let object = statement.createdObject { locations["\(object.kind) \(object.name)"] = "schema.sql line \(statement.line)" }
        }
        if hasTemplate { try checkTemplate(templatePath, against: targetSchema, locations) }
        let reference = try declarative.loadTarget()
        defer { try? reference.close() }
        try reference.read { try Self.refuseReserved($0, file: "schema.sql") }
        if let onOpenScript { try checkOnOpen(onOpenScript, in: reference) }
        return SchemaBundle(
            directory: root, migrations: [], declarative: declarative, schemaScript: declarative.script,
            templatePath: hasTemplate ? templatePath : nil, onOpenScript: onOpenScript, targetSchema: targetSchema,
            fingerprint: Digest.sha256Hex(digestInput.joined(separator: "\n")))
    }

    /// `schema.sql` read as a declarative schema, when its first line says it is one.
    private func readDeclarative() throws -> DeclarativeSchema? {
        let path = root + "/schema.sql"
        guard FileSystem.exists(path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let text = String(data: data, encoding: .utf8) else {
            throw AccountdError(.invalidBundle, "schema.sql is not valid UTF-8 text", file: "schema.sql")
        }
        let firstLine = BundleText.firstLine(text)
        guard SchemaDirectives.declaredVersion(firstLine: firstLine) != nil else { return nil }
        if FileSystem.entry(at: root + "/migrations") != .missing {
            throw AccountdError(
                .invalidBundle,
                "schema.sql declares a declarative bundle, but there is a migrations/ folder too: a bundle is either a chain of migrations or declarative; remove one",
                file: "schema.sql", line: 1)
        }
        try Self.refuseMiscasedDirectives(text)
        // Checked before SQLite runs any of it: no ATTACH, VACUUM or transaction control.
        let script = SQLScript(text)
        try Migration.checkStatements(script, file: "schema.sql")
        return try DeclarativeSchema.read(text: text, data: data, script: script, interrupt: interrupt)
    }

    /// Refuses a `template.sqlite` that is not SQLite, holds reserved objects, or has another schema than the target.
    private func checkTemplate(_ templatePath: String, against targetSchema: NormalizedSchema, _ referenceLocations: [String: String]) throws {
        if let wal = try? FileManager.default.attributesOfItem(atPath: templatePath + "-wal")[.size] as? Int, wal > 0 {
            throw AccountdError(
                .invalidBundle,
                "template.sqlite has a non-empty template.sqlite-wal beside it: its last changes are not in the file itself. "
                    + "Run sqlite3 template.sqlite 'PRAGMA wal_checkpoint(TRUNCATE)' and ship the file alone",
                file: "template.sqlite")
        }
        if let journal = try? FileManager.default.attributesOfItem(atPath: templatePath + "-journal")[.size] as? Int, journal > 0 {
            // The template is opened immutable, so SQLite would not roll this journal back:
            // every new account would get the half-written file.
            throw AccountdError(
                .invalidBundle,
                "template.sqlite has a non-empty template.sqlite-journal beside it: a write to it was interrupted and the file itself may be half-changed. "
                    + "Open it once with sqlite3 template.sqlite 'PRAGMA integrity_check' (that rolls the journal back) and ship the file alone",
                file: "template.sqlite")
        }
        let template: NormalizedSchema
        do {
            let queue = try Connections.template(templatePath)
            template = try queue.read { db in
                let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                if integrity != ["ok"] {
                    throw AccountdError(
                        .invalidBundle,
                        "template.sqlite is damaged: PRAGMA integrity_check says \(integrity.prefix(3).joined(separator: "; ")); "
                            + "rebuild the template (sqlite3 template.sqlite .dump | sqlite3 new.sqlite)",
                        file: "template.sqlite")
                }
                let reserved = try SchemaReader.reservedReferences(db, litestream: false)
                if !reserved.isEmpty {
                    throw AccountdError(
                        .invalidBundle,
                        "template.sqlite contains \(reserved.joined(separator: ", ")): names beginning with accountd_ are reserved; remove them from the template",
                        file: "template.sqlite")
                }
                // Seed rows are copied into every new account: one that breaks a foreign key would fail
                // that account's next migration, so it is refused here, as a migration would be.
                let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
                if !violations.isEmpty {
                    throw AccountdError(
                        .invalidBundle,
                        "template.sqlite has \(violations.count) row(s) that break a foreign key, e.g. table \(violations[0]["table"] as String) "
                            + "row \(violations[0]["rowid"] as Int64? ?? 0) references a missing row in \(violations[0]["parent"] as String); fix its seed rows",
                        file: "template.sqlite")
                }
                return try SchemaReader.read(db)
            }
            try queue.close()
        } catch let error as DatabaseError {
            throw AccountdError(
                .invalidBundle, "template.sqlite cannot be read as SQLite: \(error.message ?? "\(error.resultCode)")",
                file: "template.sqlite")
        }
        try compare(targetSchema, template, "template.sqlite", referenceLocations, [:])
    }

    /// `on-open.sql` must run against the target schema: tries it in `reference` and rolls it back.
    private func checkOnOpen(_ onOpenScript: SQLScript, in reference: DatabaseQueue) throws {
        // on-open.sql must run against the target schema; try it and roll it back.
        try reference.writeWithoutTransaction { db in try interrupt.run(on: db) {
            try db.execute(sql: "SAVEPOINT on_open_check")
            defer { try? db.execute(sql: "ROLLBACK TO on_open_check; RELEASE on_open_check") }
            try run(onOpenScript, file: "on-open.sql", in: db)
            try Self.refuseReserved(db, file: "on-open.sql")
        } }
    }

    /// Refuses a declarative `schema.sql` line with a directive that its reader would pass over:
    /// it reads `-- accountd:` and `--accountd:` as written, in lowercase (a chain migration's
    /// header takes any case; here a `-- ACCOUNTD: renamed-from` would be a silent no-op).
    private static func refuseMiscasedDirectives(_ text: String) throws {
        for (offset, line) in BundleText.lines(text).enumerated() where offset > 0 {
            var rest = line[...]
            while let dashes = rest.range(of: "--") {
                let after = rest[dashes.upperBound...]
                let comment = after.drop { $0 == " " || $0 == "\t" }
                if comment.lowercased().hasPrefix("accountd:"),
                    !(after.hasPrefix(" accountd:") || after.hasPrefix("accountd:"))
                {
                    throw AccountdError(
                        .invalidBundle,
                        "schema.sql line \(offset + 1): a directive is written '-- accountd: ...' (lowercase, one space or none); "
                            + "this one would be ignored; rewrite it",
                        file: "schema.sql", line: offset + 1)
                }
                rest = after
            }
        }
    }

    /// Refuses a bundle whose `file`, once run, left an object behind that is not the bundle's
    /// (see ``SchemaReader/reservedReferences(_:)``), whatever statement made it.
    private static func refuseReserved(_ db: Database, file: String) throws {
        let reserved = try SchemaReader.reservedReferences(db)
        guard !reserved.isEmpty else { return }
        throw AccountdError(
            .invalidBundle,
            "\(file) leaves \(reserved.joined(separator: ", ")) behind: names beginning with accountd_ are reserved for the daemon's own records, "
                + "_litestream_seq and _litestream_lock are Litestream's, and a bundle may not create, rename into or hang an index, trigger or view on them; "
                + "rename the object or remove the statement",
            file: file)
    }

    private func readMigrations() throws -> [Migration] {
        let folder = root + "/migrations"
        guard FileSystem.entry(at: root) == .directory else {
            throw AccountdError(.invalidBundle, "\(root) is not a folder", file: root)
        }
        guard FileSystem.entry(at: folder) == .directory else {
            throw AccountdError(
                .invalidBundle, "there is no migrations/ folder; a bundle needs at least migrations/0001_<name>.sql",
                file: "migrations")
        }
        var migrations: [Migration] = []
        for name in FileSystem.contents(of: folder).sorted() where !name.hasPrefix(".") {
            let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            migrations.append(try Migration(fileName: name, data: data))
        }
        guard !migrations.isEmpty else {
            throw AccountdError(
                .invalidBundle, "migrations/ holds no migration; a bundle needs at least migrations/0001_<name>.sql",
                file: "migrations")
        }
        migrations.sort { $0.version < $1.version }
        for (index, migration) in migrations.enumerated() {
            let expected = index + 1
            if migration.version == expected { continue }
            if migration.version < expected {
                throw AccountdError(
                    .invalidBundle,
                    "\(migration.relativePath) and \(migrations[index - 1].relativePath) both claim version \(migration.version); each version has exactly one file",
                    file: migration.relativePath, line: 1)
            }
            throw AccountdError(
                .invalidBundle,
                "version \(String(format: "%04d", expected)) is missing: numbering must be contiguous from 0001, but \(migration.relativePath) follows \(index == 0 ? "nothing" : migrations[index - 1].relativePath)",
                file: migration.relativePath, line: 1)
        }
        return migrations
    }

    private func readScript(_ name: String, digest: inout [String]) throws -> SQLScript? {
        let path = root + "/" + name
        guard FileSystem.exists(path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let text = String(data: data, encoding: .utf8) else {
            throw AccountdError(.invalidBundle, "\(name) is not valid UTF-8 text", file: name)
        }
        digest.append("\(name) \(Digest.sha256Hex(data))")
        let script = SQLScript(text)
        try Migration.checkStatements(script, file: name)
        return script
    }

    private func run(_ script: SQLScript, file: String, in db: Database) throws {
        do {
            try ScriptRunner.run(script, file: file, in: db)
        } catch {
            if error.resultCode.primaryResultCode == .SQLITE_INTERRUPT, let limit = interrupt.timeLimit, interrupt.isPastDeadline {
                throw AccountdError.checkOverTime(at: error.location, limit: limit, file: error.file, line: error.line)
            }
            if error.resultCode.primaryResultCode == .SQLITE_INTERRUPT && interrupt.isStopped {
                throw AccountdError(
                    .interrupted,
                    "the check of the bundle was stopped at \(error.location), still running on an empty database (the daemon is stopping, "
                        + "or a newer reload superseded this one); a statement there may never end: fix it",
                    file: error.file, line: error.line)
            }
            // A new account is built by running the bundle before the daemon's records exist, so a
            // bundle script can never rely on them.
            let reason =
                error.file != "on-open.sql"
                    && (error.sqliteMessage.contains("no such table: accountd_") || error.sqliteMessage.contains("no such table: main.accountd_"))
                ? "; the daemon's accountd_* tables do not exist while a new account is built from the bundle, so bundle scripts may not read them"
                : ""
            throw AccountdError(
                .invalidBundle, "\(error.location): \(error.sqliteMessage)\(reason)", file: error.file, line: error.line)
        }
    }

    private func compare(
        _ chain: NormalizedSchema, _ other: NormalizedSchema, _ otherName: String,
        _ chainLocations: [String: String], _ otherLocations: [String: String]
    ) throws {
        let diff = SchemaDiff(
            leftName: "migrations", rightName: otherName, leftLocations: chainLocations, rightLocations: otherLocations,
            quotesDefinitions: true)
        let differences = diff.differences(chain, other)
        guard !differences.isEmpty else { return }
        let firstLine = otherLocations.values.compactMap { Int($0.split(separator: " ").last ?? "") }.min()
        throw AccountdError(
            .invalidBundle,
            "\(otherName) does not build the same schema as the migrations: \(differences.count) difference(s); fix \(otherName) or the migrations so both give one schema",
            file: otherName, line: firstLine, details: differences)
    }

    /// `CREATE TABLE sqlite_sequence(...)`, as `sqlite3 .schema` prints it, cannot be run; it is skipped.
    private static func createsInternalTable(_ statement: SQLScript.Statement) -> Bool {
        statement.createdObject?.name.hasPrefix("sqlite_") ?? false
    }

    /// `kind name` to its SQL, for every object of the main database.
    private static func objectSQL(_ db: Database) throws -> [String: String] {
        var out: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL") {
            out["\(row["type"] as String) \((row["name"] as String).lowercased())"] = row["sql"]
        }
        return out
    }

    private static func location(of key: String, in script: SQLScript, file: String) -> String {
        let name = String(key.split(separator: " ", maxSplits: 1).last ?? "")
        let line = script.statements.first { $0.mentionedNames.contains(name) }?.line ?? 1
        return "\(file) line \(line)"
    }
}

extension SQLScript {
    init(statements: [Statement]) {
        self.init("")
        self.statements = statements
    }
}

extension AccountdError {
    /// A bundle's check ran past `limit` (`schema.checkTimeoutSeconds`) at `location`.
    static func checkOverTime(at location: String, limit: Duration, file: String?, line: Int?) -> AccountdError {
        AccountdError(
            .invalidBundle,
            "the check of the bundle ran past its time limit of \(limit.components.seconds) s (schema.checkTimeoutSeconds) at \(location), "
                + "still running on an empty database: a statement there may never end; fix it, or raise schema.checkTimeoutSeconds if it is only slow",
            file: file, line: line)
    }
}
