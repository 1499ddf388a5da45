import CSystemd

/// Tells systemd what the daemon is doing (`sd_notify`). Without `NOTIFY_SOCKET` it does nothing.
enum SystemdNotifier {
    static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }

    static func ready(status: String) { notify("READY=1\nSTATUS=\(status)") }
    static func status(_ text: String) { notify("STATUS=\(text)") }
    static func stopping() { notify("STOPPING=1\nSTATUS=shutting down") }
}
