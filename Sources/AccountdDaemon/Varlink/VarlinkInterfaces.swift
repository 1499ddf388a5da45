import AccountdProtocol

/// The descriptions of the interfaces the varlink socket serves, for
/// `org.varlink.service.GetInterfaceDescription`.
///
/// `io.accountd`'s is the repository's `io.accountd.varlink`, embedded in the daemon when
/// it is built (`Package.swift` declares it a resource of this target, through the link
/// `Varlink/io.accountd.varlink`), so the file in the repository stays the one source
/// and the daemon needs no file at run time.
enum VarlinkInterfaces {
    /// `io.accountd.varlink`, as built in.
    static let accountd = String(decoding: PackageResources.io_accountd_varlink, as: UTF8.self)

    /// The description of `org.varlink.service`, which every varlink service serves.
    static let service = """
        # The varlink service interface, served by every varlink service.
        interface org.varlink.service

        # Which service this is, and the interfaces it serves.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # The description of one of the interfaces served.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The interface named is not served here.
        error InterfaceNotFound (interface: string)

        # The interface has no method by that name.
        error MethodNotFound (method: string)

        # The method is declared but not implemented.
        error MethodNotImplemented (method: string)

        # A parameter is missing, unknown or of the wrong type.
        error InvalidParameter (parameter: string)

        # The caller may not call the method.
        error PermissionDenied ()

        # The method streams its replies; call it with "more": true.
        error ExpectedMore ()

        """

    /// The description of `interface`.
    ///
    /// - Throws: ``ProtocolError`` `org.varlink.service.InterfaceNotFound` for any other interface.
    static func description(of interface: String) throws(ProtocolError) -> String {
        switch interface {
        case Method.interface: return accountd
        case VarlinkCall.serviceInterface: return service
        default: throw VarlinkCall.interfaceNotFound(interface)
        }
    }
}
