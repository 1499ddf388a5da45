import Foundation
import Logging

/// Sets up swift-log for the daemon: plain lines on stderr.
public enum LoggingSetup {
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
