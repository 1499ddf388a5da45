import Foundation

/// The project's built programs, found beside the test runner (or in `$ACCOUNTD_BIN_DIR`).
public enum Binaries {
    public static var directory: String {
        if let dir = ProcessInfo.processInfo.environment["ACCOUNTD_BIN_DIR"] { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // The runner is <bin>/accountdPackageTests.xctest (a file on Linux, a bundle elsewhere).
        while url.path != "/" && !FileManager.default.isExecutableFile(atPath: url.deletingLastPathComponent().path + "/accountd") {
            url.deleteLastPathComponent()
        }
        return url.deletingLastPathComponent().path
    }

    public static var accountd: String { directory + "/accountd" }
    public static var accountctl: String { directory + "/accountctl" }

    /// Starts `path` with `arguments`; standard output and error go to files in `logDirectory`.
    public static func start(_ path: String, _ arguments: [String], logDirectory: String, environment: [String: String]? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let name = (path as NSString).lastPathComponent
        FileManager.default.createFile(atPath: logDirectory + "/\(name).out", contents: nil)
        FileManager.default.createFile(atPath: logDirectory + "/\(name).err", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: logDirectory + "/\(name).out")
        process.standardError = FileHandle(forWritingAtPath: logDirectory + "/\(name).err")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }
}
