import Foundation

/// Paths of the repository's own files used by tests.
public enum Repository {
    /// The checkout's root folder.
    public static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .path

    /// `config/schema`, the sample bundle.
    public static var sampleBundle: String { root + "/config/schema" }

    /// `../shared/corpus` beside the checkout, or `$ACCOUNTD_CORPUS`.
    public static var corpus: String {
        ProcessInfo.processInfo.environment["ACCOUNTD_CORPUS"] ?? root + "/../shared/corpus"
    }
}
