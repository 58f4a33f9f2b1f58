#if Network
import KeychainCore
import KeychainNetwork

/// What a program built with the package's Network trait registers with KeychainCore when it starts: the sync
/// engines (``SyncServices``), and OCSP questions over HTTP (KeychainNetwork's ``HTTPOCSPTransport``).
package enum NetworkServices {
    /// Registers both; calling it again changes nothing.
    package static func install() {
        SyncServices.register()
        HTTPOCSPTransport.install()
    }
}
#endif
