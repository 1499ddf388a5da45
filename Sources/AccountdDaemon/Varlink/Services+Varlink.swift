import AccountdCore
import AccountdProtocol

extension Services {
    /// The reply to `org.varlink.service.GetInfo`.
    func varlinkInfo() -> VarlinkInfo {
        VarlinkInfo(version: AccountdVersion.current)
    }
}
