import Foundation

/// Where `make install` puts the sample bundle, seen from the running program.
///
/// `make install PREFIX=P` installs `P/bin/accountd` and the bundle in `P/share/accountd/schema`,
/// so the default of `schema.dir` is `share/accountd/schema` beside the folder that holds the
/// program (`/usr/bin/accountd` → `/usr/share/accountd/schema`; `/usr/local/bin/accountd` →
/// `/usr/local/share/accountd/schema`). Every unit that leaves `schema.dir` unset (the
/// per-user unit, a template instance whose config names no bundle) then finds the bundle
/// installed with the program, whatever PREFIX was.
enum InstalledBundle {
    /// The default for `schema.dir`: `<prefix>/share/accountd/schema` for `<prefix>/bin/accountd`,
    /// or `/usr/local/share/accountd/schema` when the program's own path cannot be read.
    static var defaultDirectory: String {
        guard let program = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), program.hasPrefix("/") else {
            return "/usr/local/share/accountd/schema"
        }
        return directory(forProgram: program)
    }

    /// `<prefix>/share/accountd/schema` for the program at `<prefix>/bin/<name>`.
    static func directory(forProgram program: String) -> String {
        let prefix = URL(fileURLWithPath: program).deletingLastPathComponent().deletingLastPathComponent().path
        return (prefix == "/" ? "" : prefix) + "/share/accountd/schema"
    }
}
