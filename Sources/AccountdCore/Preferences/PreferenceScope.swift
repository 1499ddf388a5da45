/// Where a namespace's values live.
public enum PreferenceScope: String, Sendable, CaseIterable {
    /// In each account's own file (table `accountd_prefs`), so they follow the account
    /// through exports, snapshots and restores.
    case account
    /// In `device.sqlite` under the data root: device-wide, surviving account switches.
    case device
    /// In the daemon's memory only: never written to disk, gone on restart.
    case memory
}

/// A namespace declared in the config: `user: { scope: account }`.
public struct NamespaceDeclaration: Sendable, Hashable {
    public var name: String
    public var scope: PreferenceScope

    public init(name: String, scope: PreferenceScope) {
        self.name = name
        self.scope = scope
    }

    /// The classic five: `user` and `default` per account, `switch` and `dynamic` per
    /// device, and `memory` in RAM.
    public static let defaults: [NamespaceDeclaration] = [
        .init(name: "user", scope: .account), .init(name: "default", scope: .account),
        .init(name: "switch", scope: .device), .init(name: "dynamic", scope: .device),
        .init(name: "memory", scope: .memory),
    ]
}
