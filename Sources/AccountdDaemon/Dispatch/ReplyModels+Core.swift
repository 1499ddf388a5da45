import AccountdCore
import AccountdProtocol

// The wire models of AccountdProtocol built from the core's types: the one place where
// a core value becomes a reply.

extension SnapshotEntry {
    /// The entry for a snapshot the store took or found.
    init(_ info: SnapshotInfo) {
        self.init(snapshot: info.name, version: info.version, createdAt: info.createdAt, sizeBytes: info.sizeBytes)
    }
}

extension EditedMigrationInfo {
    /// The entry for an applied migration whose file has changed.
    init(_ edited: EditedMigration) {
        self.init(version: edited.version, name: edited.name, appliedSha256: edited.appliedSHA256, bundleSha256: edited.bundleSHA256)
    }
}

extension AccountStatusReply {
    /// The `Status {account}` reply for `status`.
    init(_ status: AccountStatus) {
        self.init(
            account: status.account.rawValue, exists: status.exists, version: status.version, target: status.target,
            state: status.state.rawValue, sizeBytes: status.sizeBytes, createdAt: status.createdAt,
            lastMigration: status.lastMigration.map { LastMigration(version: $0.version, name: $0.name, appliedAt: $0.appliedAt) },
            editedMigrations: status.editedMigrations.map(EditedMigrationInfo.init), problem: status.problem)
    }
}

extension VerifyResult {
    /// The `Verify` reply for `report`.
    init(_ report: VerifyReport) {
        self.init(
            account: report.account.rawValue, healthy: report.isHealthy, integrity: report.integrity.joined(separator: "; "),
            foreignKeys: report.foreignKeys, schema: report.schema,
            schemaCompared: report.schemaCompared, editedMigrations: report.editedMigrations.map(EditedMigrationInfo.init))
    }
}

extension PlanReply {
    /// The `Plan` reply for `plan`; `accountd plan` prints it too.
    public init(_ plan: MigrationPlan) {
        self.init(
            account: plan.account.rawValue, fromVersion: plan.fromVersion, version: plan.version,
            steps: plan.steps.map { Step(sql: $0.sql, lossy: $0.lossy) })
    }
}

extension ExportTotals {
    /// The final `Export` reply for what the exporter sent.
    init(_ summary: ExportSummary, format: ExportFormat) {
        switch format {
        case .jsonl: self.init(format: format.rawValue, tables: summary.tables.mapValues { Int($0) }, rows: Int(summary.rows))
        case .sql: self.init(format: format.rawValue, statements: Int(summary.statements))
        case .sqlite: self.init(format: format.rawValue, sizeBytes: summary.sizeBytes, sha256: summary.sha256)
        }
    }
}

extension DiskUseInfo {
    /// The reply's form of what an account takes on disk.
    init(_ use: AccountDiskUse) {
        self.init(
            fileBytes: use.fileBytes, walBytes: use.walBytes, snapshotBytes: use.snapshotBytes, snapshots: use.snapshotCount,
            litestreamBytes: use.litestreamBytes)
    }
}
