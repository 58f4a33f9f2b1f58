import Foundation
import KeychainCore
import KeychainDaemon
import KeychainDBus
import Logging
import ServiceLifecycle
import Synchronization

/// keychaind's Secret Service: connects to the user's session bus, takes `org.freedesktop.secrets`, and serves it
/// from the keychain keychaind holds, until keychaind stops or the bus connection closes (which stops keychaind).
package struct SecretServiceBridge: Service {
    /// The session bus's address.
    package var address: String
    /// Whether to take the name from a provider that allows it (gnome-keyring does).
    package var replace: Bool
    /// The policy for programs that are not registered from the environment (nil: the keychain's settings decide).
    package var policy: UnregisteredCallerPolicy?
    /// The served keychain's engine.
    package var engine: KeychainEngine
    /// keychaind's caller identification.
    package var context: DaemonLauncher.DaemonContext

    /// A bridge for `engine` on the bus at `address`.
    package init(address: String, replace: Bool, policy: UnregisteredCallerPolicy?, engine: KeychainEngine, context: DaemonLauncher.DaemonContext) {
        self.address = address
        self.replace = replace
        self.policy = policy
        self.engine = engine
        self.context = context
    }

    /// The session bus address from `environment`, or a message saying how to give one.
    package static func sessionBusAddress(_ environment: [String: String]) throws(KeychainError) -> String {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        // Started by the bus itself (D-Bus activation without systemd): the bus that started it.
        if environment["DBUS_STARTER_BUS_TYPE"] == "session", let address = environment["DBUS_STARTER_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
            FileManager.default.fileExists(atPath: runtime + "/bus")
        {
            return "unix:path=" + runtime + "/bus"
        }
        throw KeychainError(
            code: .notAvailable,
            message:
                "--secret-service needs the session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist. Start keychaind from the desktop session (systemd --user does), or set DBUS_SESSION_BUS_ADDRESS."
        )
    }

    /// Serves until the graceful shutdown or until the bus connection closes (returning then ends keychaind); throws
    /// when the bus cannot be reached or another provider keeps the name.
    package func run() async throws {
        let bus: DBusServerConnection
        do {
            bus = try DBusServerConnection(address: address)
        } catch {
            throw KeychainError(code: .notAvailable, message: "The session bus at \(address) could not be reached: \(error.message)")
        }
        defer { bus.close() }
        let access = SecretServiceAccess(authority: context.authority, environmentPolicy: policy, prompters: context.prompters, approvals: context.approvals, logger: context.logger)
        let provider = SecretServiceProvider(bus: bus, store: SecretStore(engine: engine), access: access, logger: context.logger)
        try await provider.claimName(replace: replace)
        // The default collection exists before the first call asks for it.
        do {
            _ = try SecretStore(engine: engine).collections()
        } catch {
            context.logger.warning("the default Secret Service collection could not be made yet", metadata: ["reason": "\(error.message)"])
        }
        let stopping = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            await provider.run()
        } onGracefulShutdown: {
            stopping.store(true, ordering: .relaxed)
            bus.close()
        }
        // The bus went away on its own: the session ended (or its bus daemon died). gnome-keyring exits then, and so
        // does keychaind (DaemonLauncher ends the group when an added service returns); the next session's bus, or
        // systemd's socket, starts a new one.
        if !stopping.load(ordering: .relaxed) {
            context.logger.notice(
                "the session bus closed; keychaind stops, as its Secret Service ends with the session",
                metadata: ["bus": "\(address)"])
        }
    }
}
