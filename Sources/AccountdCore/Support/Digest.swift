import Crypto
import Foundation

/// SHA-256 as lowercase hex, the form stored in `accountd_migrations.sha256`.
enum Digest {
    static func sha256Hex(_ data: some DataProtocol) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    static func sha256Hex(_ text: String) -> String {
        sha256Hex(Data(text.utf8))
    }
}
