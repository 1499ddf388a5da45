import AccountdClient
import AccountdProtocol
import ArgumentParser

/// `accountctl list [--details]`: every account with its size, and optionally its version and state.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the accounts.",
        discussion: """
            Prints ACCOUNT and SIZE (the file and its WAL), plus with --details VERSION, \
            STATE and the disk apart: FILE, WAL, SNAPSHOTS (how many, and their size) and \
            LITESTREAM (Litestream's local state), which makes the daemon read each file's \
            header. With --json, one object per account, then \
            {"count": N}.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Also show each account's schema version and state.")
    var details = false

    func run() async throws {
        var table = Table(
            headers: details ? ["ACCOUNT", "SIZE", "VERSION", "STATE", "FILE", "WAL", "SNAPSHOTS", "LITESTREAM"] : ["ACCOUNT", "SIZE"])
        table.rightAligned = details ? [1, 2, 4, 5, 6, 7] : [1]
        let list = try await global.connect().list(details: details)
        for entry in list.entries {
            if global.json {
                Output.json(entry.parameters)
                continue
            }
            var row = [entry.account, Output.size(entry.sizeBytes)]
            if details {
                row += [Output.text(entry.details?.version), entry.details?.state ?? "-"]
                if let disk = entry.details?.disk {
                    row += [
                        Output.size(disk.fileBytes), Output.size(disk.walBytes), "\(disk.snapshots) \(Output.size(disk.snapshotBytes))",
                        Output.size(disk.litestreamBytes),
                    ]
                } else {
                    row += ["-", "-", "-", "-"]
                }
            }
            table.rows.append(row)
        }
        if global.json { return Output.json(list.summary.parameters) }
        if table.rows.isEmpty {
            print("No accounts.")
        } else {
            table.print()
        }
    }
}
