import AccountdProtocol
import Foundation

/// Small helpers over files.
public enum Files {
    public static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    public static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    /// The size of a file in bytes, -1 when it cannot be read.
    public static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int) ?? -1
    }

    /// The account `state.json` under `dataRoot` names as the active account of `uid` (by
    /// default this process's, the caller of the tests' switches), as a person reads it: of
    /// its lines (slots), the one whose `generation` is highest, its `accounts` entry for the
    /// uid (or an older file's one `active` account).
    public static func savedActiveAccount(_ dataRoot: String, uid: UInt32 = getuid()) throws -> String? {
        let text = try String(contentsOfFile: dataRoot + "/state.json", encoding: .utf8)
        let slots = text.split(separator: "\n").compactMap { try? JSONParser.parse(Array($0.utf8)) }
        let newest = slots.max { ($0["generation"]?.intValue ?? 0) < ($1["generation"]?.intValue ?? 0) }
        guard let accounts = newest?["accounts"] else { return newest?["active"]?.stringValue }
        return accounts[String(uid)]?.stringValue
    }

    public static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// Runs the `sqlite3` shell on `database` with `sql` on standard input; returns standard output.
    @discardableResult
    public static func sqlite3(_ database: String, _ sql: String, arguments: [String] = []) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = arguments + [database]
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        input.fileHandleForWriting.write(Data(sql.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ShellError(message: String(decoding: err, as: UTF8.self))
        }
        return String(decoding: out, as: UTF8.self)
    }

    public struct ShellError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { "sqlite3 failed: \(message)" }
    }
}
