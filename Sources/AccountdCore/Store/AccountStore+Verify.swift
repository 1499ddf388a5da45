import AccountdProtocol
import GRDB

/// `Verify`: the full check of an account file.
extension AccountStore {
    /// A full check of an account file: integrity, foreign keys, schema and edited migrations.
    ///
    /// - Parameter hold: the account's hold, taken before; nil to take the lock here.
    /// - Throws: ``AccountdError`` when the file is missing or not an account file.
    public func verify(_ account: AccountName, holding hold: AccountHold? = nil) throws -> VerifyReport {
        try underLock(account, holding: hold) {
            let path = root.accountPath(account)
            let facts = try AccountInspector.inspect(path: path, account: account, deep: false, busy: options.lockTimeout)
            let queue = try DatabaseQueue(
                path: path, configuration: Connections.configuration(foreignKeys: false, readonly: true, label: "verify", busy: options.lockTimeout))
            defer { try? queue.close() }
            do {
                return try verifyReport(account, facts: facts, queue)
            } catch let error as DatabaseError where [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode.primaryResultCode) {
                // Damage that stops the check itself (a page that cannot be read) is its finding.
                return VerifyReport(
                    account: account, integrity: ["fails SQLite's integrity check: \(ErrorText.of(error))"], foreignKeys: [],
                    schema: ["not compared: the file is damaged"], schemaCompared: false, editedMigrations: editedMigrations(facts),
                    readableByBundle: isUsable(facts))
            }
        }
    }

    /// ``verify(_:holding:)``'s checks on the file open in `queue`.
    private func verifyReport(_ account: AccountName, facts: AccountFacts, _ queue: DatabaseQueue) throws -> VerifyReport {
        try queue.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            let foreignKeys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { row in
                "table \(row["table"] as String) row \((row["rowid"] as Int64?).map(String.init) ?? "?") references a missing row in \(row["parent"] as String)"
            }
            let schema: [String]
            if facts.version == bundle.targetVersion {
                schema = SchemaDiff(leftName: "the file", rightName: "the bundle's target schema")
                    .differences(try SchemaReader.read(db), bundle.targetSchema)
            } else if isUsable(facts) {
                schema = [
                    "not compared: the file is at version \(facts.version) and the bundle at \(bundle.targetVersion); the schema is compared when they match"
                ]
            } else {
                schema = [
                    "not compared: the file is at version \(facts.version), newer than the bundle's \(bundle.targetVersion), which cannot read it (it needs \(facts.lastCompatibleVersion) or later)"
                ]
            }
            return VerifyReport(
                account: account, integrity: integrity, foreignKeys: foreignKeys, schema: schema,
                schemaCompared: facts.version == bundle.targetVersion, editedMigrations: editedMigrations(facts),
                readableByBundle: isUsable(facts))
        }
    }
}
