/// The daemon library: server, dispatch, access control and systemd glue.
///
/// It is built on ``AccountdCore`` and ``AccountdProtocol``; the `accountd`
/// executable only parses flags and calls into it.
public enum AccountdDaemon {}
