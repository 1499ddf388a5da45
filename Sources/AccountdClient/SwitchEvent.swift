import AccountdProtocol

/// What ``AccountdClient/switching(to:create:)`` yields: steps, then the result.
public enum SwitchEvent: Sendable, Hashable {
    /// A migration step began.
    case progress(SwitchProgress)
    /// The switch is done; always the last element.
    case finished(SwitchResult)
}
