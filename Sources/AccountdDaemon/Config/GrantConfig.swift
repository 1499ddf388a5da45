import Foundation
import Yams

/// Reads `access.grants` from the config file: a list, each item one grant.
///
/// swift-configuration reads no list of mappings, so this section is read with Yams
/// directly, and checked whole when the settings load (at start and at each reload): an
/// item with an unknown key, without `user` or `group` (or with both), without `accounts`
/// or `access`, naming a user or group the system does not know, or with an access other
/// than `read` or `write`, refuses the settings with the file, line and what to do.
///
/// ```yaml
/// access:
///   grants:
///     - { group: apps,  accounts: "*",       access: read }
///     - { user: kiosk,  accounts: "kiosk-*", access: write }
///     - { group: users, accounts: "$user",   access: write }
/// ```
enum GrantConfig {
    /// The keys an item may have.
    static let keys: Set<String> = ["user", "group", "accounts", "access"]

    /// The grants in `file`; none when it has no `access.grants`.
    static func read(file: String?) throws -> [AccessGrant] {
        guard let file, let text = try NamespaceConfig.text(of: file) else { return [] }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw YAMLProblem.failure(error, file: file, text: text)
        }
        guard let section = root?["access"]?["grants"], section.null == nil else { return [] }
        guard let items = section.sequence else {
            throw SettingsLoader.Failure(
                description: "\(file) line \(section.mark?.line ?? 0): access.grants must be a list, each item e.g. { user: kiosk, accounts: \"kiosk-*\", access: write }")
        }
        return try items.map { try grant($0, file: file) }
    }

    private static func grant(_ item: Node, file: String) throws -> AccessGrant {
        let line = item.mark?.line ?? 0
        func failure(_ text: String) -> SettingsLoader.Failure {
            SettingsLoader.Failure(description: "\(file) line \(line): access.grants: \(text)")
        }
        guard let mapping = item.mapping else {
            throw failure("each grant is a mapping, e.g. { user: kiosk, accounts: \"kiosk-*\", access: write }")
        }
        for key in mapping.keys {
            let name = key.string ?? "\(key)"
            guard keys.contains(name) else {
                throw failure("unknown key '\(name)' in a grant; a grant has user or group, accounts and access")
            }
        }
        let user = item["user"]?.string
        let group = item["group"]?.string
        let subject: AccessGrant.Subject
        switch (user, group) {
        case (let user?, nil):
            let found: UInt32?
            do { found = try NameOrID.resolve(user, kind: "user", lookup: { getpwnam($0).map { $0.pointee.pw_uid } }) } catch { throw failure(error.message) }
            guard let uid = found else {
                throw failure("no such user '\(user)'; name an existing user or give a numeric uid")
            }
            subject = .user(uid)
        case (nil, let group?):
            let found: UInt32?
            do { found = try NameOrID.resolve(group, kind: "group", lookup: { getgrnam($0).map { $0.pointee.gr_gid } }) } catch { throw failure(error.message) }
            guard let gid = found else {
                throw failure("no such group '\(group)'; name an existing group or give a numeric gid")
            }
            subject = .group(gid)
        default:
            throw failure("a grant names exactly one of user or group")
        }
        guard let pattern = item["accounts"]?.string, !pattern.isEmpty else {
            throw failure("a grant needs accounts: a pattern such as \"*\" or \"kiosk-*\", or \"$user\"")
        }
        let accounts: AccessGrant.Accounts
        if pattern == "$user" {
            accounts = .callerName
        } else if let bad = pattern.unicodeScalars.first(where: { !isPatternCharacter($0) }) {
            throw failure(
                "accounts '\(pattern)' holds '\(bad)'; a pattern is made of account-name characters (A-Z a-z 0-9 @ . _ + -) and * ? [ ] !, or is exactly \"$user\"")
        } else {
            accounts = .pattern(pattern)
        }
        guard let levelText = item["access"]?.string, let level = AccessGrant.Level(rawValue: levelText) else {
            throw failure("a grant needs access: read or write")
        }
        return AccessGrant(subject: subject, accounts: accounts, level: level)
    }

    private static func isPatternCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "@._+-*?[]!".unicodeScalars.contains(scalar))
    }
}
