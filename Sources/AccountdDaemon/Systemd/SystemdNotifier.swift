import CSystemd

/// Sends a state to systemd (`sd_notify`). Without `NOTIFY_SOCKET` it does nothing.
///
/// Only ``SystemdStatus`` and the ``Watchdog`` call it: they own what the daemon says.
enum SystemdNotifier {
    static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
