import Foundation

/// A fresh temporary folder for one test, removed when the test is done.
struct TestDirectory: ~Copyable {
    let path: String

    init(_ label: String = #function) {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let safe = label.filter { $0.isLetter || $0.isNumber }.prefix(40)
        path = base + "/accountd-test-\(safe)-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func sub(_ name: String) -> String { path + "/" + name }
}

/// Paths of the repository's own files used by tests.
enum Repository {
    /// The checkout's root folder.
    static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .path

    /// `config/schema`, the sample bundle.
    static var sampleBundle: String { root + "/config/schema" }

    /// `../shared/corpus` beside the checkout, or `$ACCOUNTD_CORPUS`.
    static var corpus: String {
        ProcessInfo.processInfo.environment["ACCOUNTD_CORPUS"] ?? root + "/../shared/corpus"
    }
}

/// Writes schema bundles for tests.
enum BundleFixture {
    /// Writes a bundle whose migrations are `steps`, in order, named `0001_step1.sql`, ...
    @discardableResult
    static func write(
        at path: String, steps: [String], names: [String]? = nil, schema: String? = nil, onOpen: String? = nil
    ) throws -> String {
        let migrations = path + "/migrations"
        try FileManager.default.createDirectory(atPath: migrations, withIntermediateDirectories: true)
        for (index, sql) in steps.enumerated() {
            let name = names?[index] ?? "step\(index + 1)"
            try sql.write(toFile: migrations + "/" + String(format: "%04d_", index + 1) + name + ".sql", atomically: true, encoding: .utf8)
        }
        if let schema { try schema.write(toFile: path + "/schema.sql", atomically: true, encoding: .utf8) }
        if let onOpen { try onOpen.write(toFile: path + "/on-open.sql", atomically: true, encoding: .utf8) }
        return path
    }

    /// Copies the first `version` migrations of the bundle at `source` into a new bundle at `path`.
    static func truncate(_ source: String, at version: Int, into path: String) throws -> String {
        let files = try FileManager.default.contentsOfDirectory(atPath: source + "/migrations")
            .filter { $0.hasSuffix(".sql") }.sorted()
        try FileManager.default.createDirectory(atPath: path + "/migrations", withIntermediateDirectories: true)
        for file in files.prefix(version) {
            try FileManager.default.copyItem(atPath: source + "/migrations/" + file, toPath: path + "/migrations/" + file)
        }
        return path
    }
}

/// Small helpers over files.
enum Files {
    static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// Runs the `sqlite3` shell on `database` with `sql` on standard input; returns standard output.
    @discardableResult
    static func sqlite3(_ database: String, _ sql: String, arguments: [String] = []) throws -> String {
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

    struct ShellError: Error, CustomStringConvertible {
        var message: String
        var description: String { "sqlite3 failed: \(message)" }
    }
}
