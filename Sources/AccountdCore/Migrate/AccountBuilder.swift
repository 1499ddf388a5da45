import AccountdProtocol
import Foundation
import GRDB

/// Builds a new account file at the bundle's target version.
///
/// The file is built under a temporary name that no account can have (it begins
/// with `.`), made durable, and only then linked into place, so a crash leaves
/// either no account or a complete one, and an existing file is never overwritten.
struct AccountBuilder {
    var bundle: SchemaBundle
    var account: AccountName
    var root: DataRoot

    func build() throws -> SchemaBundle.CreationMethod {
        let final = root.accountPath(account)
        let temp = root.stagingPath(account, .creating)
        // Whatever an interrupted creation left there (a file, a folder, a link) goes, unfollowed.
        try root.clearStaging(account, .creating)
        try FileSystem.createExclusive(temp)
        let method = bundle.creationMethod
        do {
            let started = ContinuousClock.now
            let queue = try DatabaseQueue(path: temp, configuration: Connections.configuration(foreignKeys: false, label: "create"))
            if let template = bundle.templatePath {
                let source = try Connections.template(template)
                try source.backup(to: queue)
                try source.close()
            }
            try queue.writeWithoutTransaction { db in
                // A migration that never ends must not hold the daemon at SIGTERM either.
                try SQLiteInterrupt().run(on: db) {
                    try db.inTransaction(.exclusive) {
                        switch method {
                        case .template:
                            // A template made from a replicated file carries Litestream's tables; a new account starts without them.
                            try LitestreamTables.drop(db)
                        case .schemaSQL:
                            try run(bundle.schemaScript!, file: "schema.sql", db)
                        case .migrations:
                            for migration in bundle.migrations { try run(migration.script, file: migration.relativePath, db) }
                        }
                        let differences = SchemaDiff(leftName: "the new file", rightName: "the bundle's target schema")
                            .differences(try SchemaReader.read(db), bundle.targetSchema)
                        if !differences.isEmpty {
                            throw AccountdError(
                                .migrationFailed,
                                "account \(account) built from \(method.rawValue) does not match the bundle's target schema; nothing was created",
                                account: account.rawValue, details: differences)
                        }
                        try AccountRecords.initialize(
                            db, account: account.rawValue, bundle: bundle, method: method.rawValue,
                            durationMs: (ContinuousClock.now - started).milliseconds)
                        return .commit
                    }
                }
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
            try queue.close()
            guard try FileSystem.linkIntoPlace(temp, at: final) else {
                throw AccountdError(
                    .accountBusy, "account \(account) was created by someone else at the same moment; retry",
                    account: account.rawValue, file: final)
            }
        } catch {
            try? FileSystem.removeWithCompanions(temp)
            if let error = error as? AccountdError { throw error }
            let storage = (error as? DatabaseError).map { [.SQLITE_FULL, .SQLITE_IOERR].contains($0.resultCode.primaryResultCode) } ?? false
            throw AccountdError(
                storage ? .storage : .migrationFailed, "creating account \(account) failed: \(ErrorText.of(error)); nothing was created",
                account: account.rawValue, file: final)
        }
        return method
    }

    private func run(_ script: SQLScript, file: String, _ db: Database) throws {
        do {
            try ScriptRunner.run(script, file: file, in: db)
        } catch {
            if error.resultCode.primaryResultCode == .SQLITE_INTERRUPT && SQLiteInterrupt.isStopping {
                throw AccountdError(
                    .interrupted, "creating account \(account) was stopped at \(error.location) because the daemon is stopping; nothing was created",
                    account: account.rawValue, file: error.file, line: error.line, toVersion: bundle.targetVersion)
            }
            throw AccountdError(
                .migrationFailed, "creating account \(account): \(error.location) failed: \(error.sqliteMessage); nothing was created",
                account: account.rawValue, file: error.file, line: error.line, toVersion: bundle.targetVersion)
        }
    }
}
