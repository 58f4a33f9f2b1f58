import Foundation
import KeychainCore
import KeychainDBus

#if canImport(Glibc)
import Glibc
#endif

/// The backend of xdg-desktop-portal's Secret portal, `org.freedesktop.impl.portal.Secret` (version 1), at
/// `/org/freedesktop/portal/desktop` on keychaind's Secret Service connection (as gnome-keyring serves it).
///
/// A sandboxed application calls `org.freedesktop.portal.Secret.RetrieveSecret` with a file descriptor;
/// xdg-desktop-portal identifies the application (its Flatpak app ID) and calls `RetrieveSecret` here with that ID and
/// descriptor; keychaind writes the application's secret (``SecretStore/portalSecret(appID:)``, 64 bytes) to it.
/// The app ID is believed only from xdg-desktop-portal itself: the caller must be one of ``portalExecutables`` as
/// keychaind identifies processes (the kernel's executable, untraced, no `LD_PRELOAD`), so another program of the
/// user cannot ask for any application's secret by naming it.
extension SecretServiceProvider {
    /// The object path of portal backends.
    static let portalPath = "/org/freedesktop/portal/desktop"
    /// The backend interface.
    static let portalInterface = "org.freedesktop.impl.portal.Secret"
    /// Where distributions install xdg-desktop-portal (Debian and Fedora, Arch).
    static let portalExecutables: Set<String> = ["/usr/libexec/xdg-desktop-portal", "/usr/lib/xdg-desktop-portal"]
    /// How long writing a secret to the application's descriptor may wait for room.
    static let portalWriteTimeout: Duration = .seconds(5)

    /// The portal's responses: success, cancelled, other error.
    enum PortalResponse: UInt32 {
        case success = 0
        case cancelled = 1
        case failed = 2
    }

    /// Answers a call at ``portalPath``.
    func portalMethod(_ call: DBusMethodCall, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return [.string(Self.introspectionDocument(Self.portalXML, children: []))]
        case ("org.freedesktop.DBus.Peer", "Ping"):
            return []
        case ("org.freedesktop.DBus.Properties", "Get"):
            try expect(call, "ss")
            guard call.arguments[0] == .string(Self.portalInterface), call.arguments[1] == .string("version") else {
                throw SecretServiceError(name: SecretServiceError.unknownProperty, message: "\(Self.portalPath) has only \(Self.portalInterface).version.")
            }
            return [.variant(.uint32(1))]
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            try expect(call, "s")
            guard call.arguments[0] == .string(Self.portalInterface) || call.arguments[0] == .string("") else {
                throw SecretServiceError(name: SecretServiceError.unknownInterface, message: "\(Self.portalPath) has no interface \(call.arguments[0].string ?? "").")
            }
            return [SecretValues.propertyDictionary([("version", .uint32(1))])]
        case (Self.portalInterface, "RetrieveSecret"), (nil, "RetrieveSecret"):
            try expect(call, "osha{sv}")
            guard case .string(let appID) = call.arguments[1], case .fileDescriptor(let descriptor) = call.arguments[2] else {
                throw .invalid("RetrieveSecret takes a request handle (o), an app ID (s), a file descriptor (h) and options (a{sv}).")
            }
            try requirePortal(caller)
            return [.uint32(retrieveSecret(appID: appID, into: descriptor).rawValue), .array(elementSignature: "{sv}", [])]
        default:
            throw unknownMethod(call)
        }
    }

    /// Throws AccessDenied unless `caller` is xdg-desktop-portal, identified reliably.
    func requirePortal(_ caller: SecretServiceCaller) throws(SecretServiceError) {
        let identity = caller.session.identity
        guard identity.untrusted == nil, case .executable(let path) = identity.program, Self.portalExecutables.contains(path) else {
            logger.notice("a program that is not xdg-desktop-portal asked for a portal secret", metadata: ["program": "\(caller.description)"])
            throw SecretServiceError(
                name: SecretServiceError.accessDenied,
                message:
                    "Only xdg-desktop-portal may call \(Self.portalInterface); \(caller.description) is not it. Sandboxed applications call org.freedesktop.portal.Secret.RetrieveSecret on org.freedesktop.portal.Desktop."
            )
        }
    }

    /// Writes `appID`'s secret to `descriptor`; the portal's response.
    func retrieveSecret(appID: String, into descriptor: DBusFileDescriptor) -> PortalResponse {
        guard SecretStore.isValidAppID(appID) else {
            // xdg-desktop-portal gives an empty ID for programs that are not sandboxed: they use the Secret Service.
            logger.notice("the secret portal was asked for a program with no application ID; it uses the Secret Service directly", metadata: ["app": "\(appID.prefix(64))"])
            return .failed
        }
        let secret: [UInt8]
        do {
            secret = try store.portalSecret(appID: appID)
        } catch {
            logger.warning("a portal secret could not be read or made", metadata: ["app": "\(appID)", "reason": "\(error.message)"])
            return .failed
        }
        guard Self.writeAll(secret, to: descriptor.rawValue, within: Self.portalWriteTimeout) else {
            logger.notice("a portal secret could not be written to the application's descriptor", metadata: ["app": "\(appID)"])
            return .failed
        }
        logger.info("portal secret given", metadata: ["app": "\(appID)"])
        return .success
    }

    /// Writes every byte of `bytes` to `fd`, waiting for room at most `timeout` in all; false when it could not.
    static func writeAll(_ bytes: [UInt8], to fd: Int32, within timeout: Duration) -> Bool {
        // A pipe whose reader is gone raises SIGPIPE, which would end keychaind: blocked on this thread while
        // writing (a write's SIGPIPE is sent to the writing thread), and taken back if one came.
        var pipeSignal = sigset_t()
        var previous = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        defer {
            var pending = sigset_t()
            if sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec()
                _ = sigtimedwait(&pipeSignal, nil, &now)
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        let deadline = ContinuousClock.now + timeout
        var offset = 0
        while offset < bytes.count {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let milliseconds = Int32(clamping: left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0, poller.revents & Int16(POLLOUT) != 0 else { return false }
            // Never more than PIPE_BUF at once: poll's room is at least that much, so the write does not block even
            // on a descriptor the application left blocking.
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, min($0.count, Int(PIPE_BUF))) }
            if written < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// The backend interface as introspection shows it.
    static let portalXML = """
          <interface name="org.freedesktop.impl.portal.Secret">
            <method name="RetrieveSecret">
              <arg type="o" name="handle" direction="in"/>
              <arg type="s" name="app_id" direction="in"/>
              <arg type="h" name="fd" direction="in"/>
              <arg type="a{sv}" name="options" direction="in"/>
              <arg type="u" name="response" direction="out"/>
              <arg type="a{sv}" name="results" direction="out"/>
            </method>
            <property name="version" type="u" access="read"/>
          </interface>

        """
}
