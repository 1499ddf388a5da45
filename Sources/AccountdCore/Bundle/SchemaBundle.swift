import Foundation
import GRDB

/// A schema bundle: the folder of plain SQL an app ships to describe its database.
///
/// ```
/// <schema-dir>/
///   migrations/NNNN_<name>.sql   required, at least one, numbered 0001, 0002, ... with no gaps
///   schema.sql                   optional: the full schema at the newest version
///   template.sqlite              optional: a prebuilt newest-version database with seed rows
///   on-open.sql                  optional: run every time an account is opened
/// ```
///
/// Loading checks the whole bundle before anything uses it: contiguous numbering,
/// no transaction control, `VACUUM` or `ATTACH` at top level, no `accountd_*`
/// objects, every migration runs, and the three ways of building a new account
/// (template, `schema.sql`, the full chain) give the same ``NormalizedSchema``.
/// A bundle that fails any check is refused as a whole, with file and line.
///
/// A **declarative** bundle has no `migrations/` folder; its `schema.sql` begins with
/// `-- accountd: declarative version N` and older accounts are brought to it by a
/// computed plan (see ``DeclarativeSchema`` and ``MigrationPlan``).
public struct SchemaBundle: Sendable {
    /// How a new account is built.
    public enum CreationMethod: String, Sendable {
        case template = "template.sqlite"
        case schemaSQL = "schema.sql"
        case migrations = "migrations"
    }

    /// The bundle folder, as given.
    public let directory: String
    /// The migrations, ordered by version, starting at 1; empty for a declarative bundle.
    public let migrations: [Migration]
    /// The declarative `schema.sql`, for a declarative bundle; nil for a chain of migrations.
    public let declarative: DeclarativeSchema?
    /// `schema.sql`, if present.
    let schemaScript: SQLScript?
    /// The absolute path of `template.sqlite`, if present.
    public let templatePath: String?
    /// `on-open.sql`, if present.
    let onOpenScript: SQLScript?
    /// The schema at the target version, as the full chain of migrations builds it.
    public let targetSchema: NormalizedSchema
    /// SHA-256 over every file of the bundle: equal fingerprints mean the same bundle.
    public let fingerprint: String

    /// The target version: the highest migration number, or the version a declarative `schema.sql` declares.
    public var targetVersion: Int { declarative?.version ?? migrations.count }

    /// How new accounts are built: from the template if present, else from `schema.sql`, else the chain.
    public var creationMethod: CreationMethod {
        templatePath != nil ? .template : schemaScript != nil ? .schemaSQL : .migrations
    }

    /// The migration at `version` (1-based).
    public func migration(_ version: Int) -> Migration? {
        version >= 1 && version <= migrations.count ? migrations[version - 1] : nil
    }

    /// The `last_compatible_version` of a file whose applied migrations go up to `version`:
    /// the highest `readable-by` among them.
    /// A declarative bundle has no `readable-by`: its files need a bundle at their own version.
    public func lastCompatibleVersion(upTo version: Int) -> Int {
        if declarative != nil { return version }
        return migrations.prefix(version).map(\.readableBy).max() ?? 0
    }

    /// Loads and checks the bundle in `directory`.
    ///
    /// - Throws: ``AccountdError`` of kind `invalidBundle`, whose message names the file and
    ///   line and whose ``AccountdError/details`` list each schema difference.
    /// - Parameter interrupt: stops the check on an empty database, which a migration that
    ///   never ends would hold forever (`interrupted`).
    public static func load(from directory: String, interrupt: SQLiteInterrupt = SQLiteInterrupt()) throws -> SchemaBundle {
        let root = URL(fileURLWithPath: directory).standardizedFileURL.path
        do {
            return try BundleLoader(root: root, interrupt: interrupt).load()
        } catch var error as AccountdError where error.kind == .invalidBundle || error.kind == .interrupted {
            error.message = "schema bundle \(root) refused: " + error.message
            throw error
        }
    }

    init(
        directory: String, migrations: [Migration], declarative: DeclarativeSchema? = nil, schemaScript: SQLScript?, templatePath: String?,
        onOpenScript: SQLScript?, targetSchema: NormalizedSchema, fingerprint: String
    ) {
        self.directory = directory
        self.migrations = migrations
        self.declarative = declarative
        self.schemaScript = schemaScript
        self.templatePath = templatePath
        self.onOpenScript = onOpenScript
        self.targetSchema = targetSchema
        self.fingerprint = fingerprint
    }
}
