import Foundation

/// Paths of the repository's own files used by tests.
public enum Repository {
    /// The checkout's root folder.
    public static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .path

    /// `config/schema`, the sample bundle.
    public static var sampleBundle: String { root + "/config/schema" }

    /// The folder of real migration histories: `$ACCOUNTD_CORPUS` when set, else
    /// `../shared/corpus` beside the checkout.
    ///
    /// A plain clone has neither; tests that need the histories are then skipped
    /// (see ``corpusIsPresent`` and ``corpusSkipReason``), and `.ci/run` sets the variable.
    public static var corpus: String {
        ProcessInfo.processInfo.environment["ACCOUNTD_CORPUS"]
            ?? URL(fileURLWithPath: root).deletingLastPathComponent().appendingPathComponent("shared/corpus").path
    }

    /// Whether ``corpus`` is a folder.
    public static var corpusIsPresent: Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: corpus, isDirectory: &isFolder) && isFolder.boolValue
    }

    /// Whether `$ACCOUNTD_CORPUS` is set, in which case a missing corpus is an error, not a skip.
    public static var corpusIsRequired: Bool { ProcessInfo.processInfo.environment["ACCOUNTD_CORPUS"] != nil }

    /// Why a test that needs the real histories does not run, printed by Swift Testing with the skip.
    public static var corpusSkipReason: String {
        "needs the real migration histories: no folder at \(corpus); set ACCOUNTD_CORPUS to a copy of shared/corpus"
    }
}
