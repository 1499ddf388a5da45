import AccountdCore
import Foundation
import Yams

/// Reads the `namespaces:` section of the config file.
///
/// swift-configuration cannot list the keys of a section, so this one section is
/// read with Yams directly:
///
/// ```yaml
/// namespaces:
///   user:    { scope: account }
///   switch:  { scope: device }
///   memory:  { scope: memory }
/// ```
enum NamespaceConfig {
    /// The declared namespaces, or ``NamespaceDeclaration/defaults`` when the file has no `namespaces:`.
    static func read(file: String?) throws -> [NamespaceDeclaration] {
        guard let file, let text = try text(of: file) else { return NamespaceDeclaration.defaults }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw YAMLProblem.failure(error, file: file, text: text)
        }
        guard let section = root?["namespaces"] else { return NamespaceDeclaration.defaults }
        guard let mapping = section.mapping else {
            throw SettingsLoader.Failure(description: "\(file): 'namespaces' must map names to { scope: account|device|memory }")
        }
        var declarations: [NamespaceDeclaration] = []
        for (key, value) in mapping {
            guard let name = key.string, isValidName(name) else {
                throw SettingsLoader.Failure(
                    description: "\(file) line \(key.mark?.line ?? 0): a namespace name is 1 to 64 of A-Z a-z 0-9 _ . -")
            }
            guard let scopeText = value["scope"]?.string, let scope = PreferenceScope(rawValue: scopeText) else {
                throw SettingsLoader.Failure(
                    description: "\(file) line \(value.mark?.line ?? 0): namespace '\(name)' needs scope: account, device or memory")
            }
            if let extra = value.mapping?.keys.compactMap(\.string).first(where: { $0 != "scope" }) {
                throw SettingsLoader.Failure(
                    description: "\(file) line \(value.mark?.line ?? 0): unknown setting '\(extra)' in namespace '\(name)'; a namespace has only scope")
            }
            declarations.append(NamespaceDeclaration(name: name, scope: scope))
        }
        return declarations
    }

    /// The config file's text, or nil when it does not exist. Reads any file, `/dev/null` included.
    static func text(of path: String) throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SettingsLoader.Failure(description: "config file \(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        let data = handle.readDataToEndOfFile()
        guard let text = String(data: data, encoding: .utf8) else {
            throw SettingsLoader.Failure(description: "config file \(path) is not UTF-8 text")
        }
        return text
    }

    private static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0)) }
    }
}
