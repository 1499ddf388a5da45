import Foundation

/// A fresh temporary folder for one test, removed when the test is done.
public struct TestDirectory: ~Copyable {
    public let path: String

    public init(_ label: String = #function) {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let safe = label.filter { $0.isLetter || $0.isNumber }.prefix(40)
        path = base + "/accountd-test-\(safe)-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    public func sub(_ name: String) -> String { path + "/" + name }
}
