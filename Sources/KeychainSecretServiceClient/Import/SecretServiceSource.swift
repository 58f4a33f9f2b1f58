import Foundation
import KeychainCore
import KeychainDBus

/// Why items could not be read from another Secret Service provider: a sentence saying what to do, never a secret
/// or an attribute value.
package struct SecretServiceImportError: Error, Sendable, Hashable {
    /// What went wrong and what to do.
    package var message: String

    /// An error saying `message`.
    package init(_ message: String) { self.message = message }
}

/// A collection of the source provider, as listed before its items are read.
package struct SecretServiceSourceCollection: Sendable, Hashable {
    /// Its object path.
    package var path: String
    /// Its label.
    package var label: String
    /// Its dates (now when the provider gives none).
    package var dates: ItemDates
    /// Whether it is the provider's default collection (`ReadAlias("default")` names it).
    package var isDefault: Bool
    /// Whether it was locked when listed.
    package var locked: Bool
}

/// Another Secret Service provider (gnome-keyring, KeePassXC) on a session bus, read as a client: the reading half
/// of `security import-secret-service`.
///
/// Every call is bounded: a method call waits ``callTimeout`` (``interactiveTimeout`` for those that may ask the
/// person: `Unlock` and its prompt, `GetSecrets`, which KeePassXC may confirm with a dialog), at most
/// ``maximumCollections`` collections and ``maximumItemsPerCollection`` items each are read, and a secret longer
/// than ``SecretServiceImportItem/maximumSecretLength`` is refused. Secrets travel encrypted
/// (`dh-ietf1024-sha256-aes128-cbc-pkcs7`) unless the provider answers `NotSupported`; then in the clear
/// (``isPlain``), which the caller says. Nothing here logs or reports a secret or an attribute value.
///
/// Used from one thread (its D-Bus connection is not `Sendable`).
package final class SecretServiceSource {
    /// The Secret Service's bus name.
    package static let busName = "org.freedesktop.secrets"
    /// The service's object path.
    static let servicePath = "/org/freedesktop/secrets"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// The bound on an ordinary method call.
    package static let callTimeout: Duration = .seconds(30)
    /// The bound on calls that may wait for the person (an unlock prompt, a confirmation dialog).
    package static let interactiveTimeout: Duration = .seconds(300)
    /// The most collections read.
    package static let maximumCollections = 256
    /// The most items read from one collection.
    package static let maximumItemsPerCollection = 100_000

    /// The connection to the bus.
    private let bus: DBusConnection
    /// The unique name of the provider's connection (`:1.42`), whose signals alone are believed.
    package let owner: String
    /// The session opened by ``openSession()``.
    private var session: (path: String, crypto: SecretSessionCrypto)?

    /// Whether secrets travel in the clear: the provider refused `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    package var isPlain: Bool { session?.crypto.algorithm == .plain }

    /// Connects to the bus at `address` and finds who provides the Secret Service there.
    ///
    /// - Throws: ``SecretServiceImportError`` when the bus cannot be reached or nobody owns
    ///   `org.freedesktop.secrets` (no provider is started for the occasion: D-Bus activation is not asked for).
    package init(address: String) throws(SecretServiceImportError) {
        do {
            bus = try DBusConnection(address: address, timeout: Self.callTimeout)
        } catch {
            throw SecretServiceImportError("The session bus at \(address) could not be reached: \(error.message)")
        }
        do {
            owner = try bus.nameOwner(of: Self.busName)
        } catch  where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            throw SecretServiceImportError(
                "No Secret Service provider runs on the session bus (nobody owns \(Self.busName)). Start the one to import from (gnome-keyring-daemon, KeePassXC with its Secret Service integration on), then run the import again."
            )
        } catch {
            throw SecretServiceImportError("The session bus did not say who provides the Secret Service: \(error.message)")
        }
    }

    /// The session bus's address from `environment`: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`.
    ///
    /// - Throws: ``SecretServiceImportError`` when neither is there.
    package static func sessionBusAddress(_ environment: [String: String]) throws(SecretServiceImportError) -> String {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
            FileManager.default.fileExists(atPath: runtime + "/bus")
        {
            return "unix:path=" + runtime + "/bus"
        }
        throw SecretServiceImportError(
            "The session bus is not known: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist. Run the import from your desktop session, or set DBUS_SESSION_BUS_ADDRESS to the bus of the provider to import from."
        )
    }

    // MARK: Who provides

    /// The process that owns the name, and its executable (nil when it cannot be read).
    package func ownerProcess() throws(SecretServiceImportError) -> (pid: UInt32, executable: String?) {
        let reply: [DBusValue]
        do {
            reply = try bus.call(
                destination: DBusConnection.busName, path: "/org/freedesktop/DBus", interface: DBusConnection.busName,
                member: "GetConnectionUnixProcessID", [.string(owner)])
        } catch {
            throw SecretServiceImportError("The bus did not say which process provides the Secret Service: \(error.message)")
        }
        guard let pid = reply.first?.uint32 else {
            throw SecretServiceImportError("The bus answered GetConnectionUnixProcessID with something else.")
        }
        let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        return (pid, executable)
    }

    /// Refuses a provider that is keychaind: importing the keychain's own items into it would copy nothing new,
    /// and from another keychain is what `backup-keychain`/`restore-keychain` do with everything kept.
    ///
    /// The test is the provider's executable, read from `/proc/PID/exe` for the PID the bus gives
    /// (`GetConnectionUnixProcessID`, which the bus takes from the kernel, not from the provider): its file name
    /// is `keychaind`. Unlike a property or a method only keychaind answers, this needs no call the provider could
    /// answer falsely, and works with every keychaind, whatever its version. A keychaind renamed on disk passes;
    /// the import then only skips the items it already has.
    ///
    /// - Throws: ``SecretServiceImportError`` when the provider is keychaind.
    package func refuseKeychaind() throws(SecretServiceImportError) {
        let owner = try ownerProcess()
        guard let executable = owner.executable else { return }
        var name = URL(fileURLWithPath: executable).lastPathComponent
        if name.hasSuffix(" (deleted)") { name.removeLast(" (deleted)".count) }
        if name == "keychaind" {
            throw SecretServiceImportError(
                "The Secret Service on the session bus is keychaind (PID \(owner.pid)), which serves a keychain already: there is nothing to import from it. Stop it and start the provider to import from (gnome-keyring-daemon, KeePassXC), run the import, then start keychaind --secret-service again."
            )
        }
    }

    // MARK: Session

    /// Opens a session: `dh-ietf1024-sha256-aes128-cbc-pkcs7`, or `plain` when the provider answers
    /// `org.freedesktop.DBus.Error.NotSupported` (see ``isPlain``).
    package func openSession() throws(SecretServiceImportError) {
        let exchange: SecretSessionClientExchange
        do {
            exchange = try SecretSessionCrypto.beginClientExchange()
        } catch {
            throw SecretServiceImportError("The session's key could not be made: \(error.message)")
        }
        let reply: [DBusValue]
        do {
            reply = try bus.call(
                destination: owner, path: Self.servicePath, interface: Self.serviceInterface, member: "OpenSession",
                [.string(SecretTransferAlgorithm.dhIETF1024SHA256AES128CBCPKCS7.rawValue), .variant(.bytes(exchange.publicKey))])
        } catch  where error.name == "org.freedesktop.DBus.Error.NotSupported" {
            let reply = try call(
                Self.servicePath, Self.serviceInterface, "OpenSession",
                [.string(SecretTransferAlgorithm.plain.rawValue), .variant(.string(""))])
            guard reply.count == 2, case .objectPath(let path) = reply[1] else {
                throw SecretServiceImportError("The provider answered OpenSession with something else.")
            }
            session = (path, try Self.plainSession())
            return
        } catch {
            throw SecretServiceImportError("The provider failed \(Self.serviceInterface).OpenSession: \(error.message)")
        }
        guard reply.count == 2, case .variant(.bytes(let serverKey)) = reply[0], case .objectPath(let path) = reply[1] else {
            throw SecretServiceImportError("The provider answered OpenSession with something else.")
        }
        do {
            session = (path, try exchange.finish(serverPublicKey: serverKey))
        } catch {
            throw SecretServiceImportError("The provider's session key is not usable: \(error.message)")
        }
    }

    private static func plainSession() throws(SecretServiceImportError) -> SecretSessionCrypto {
        do {
            return try SecretSessionCrypto.open(algorithm: .plain, input: nil).0
        } catch {
            throw SecretServiceImportError(error.message)
        }
    }

    /// Closes the session (best effort: the provider closes it anyway when this connection goes).
    package func closeSession() {
        guard let session else { return }
        _ = try? bus.call(destination: owner, path: session.path, interface: "org.freedesktop.Secret.Session", member: "Close")
        self.session = nil
    }

    // MARK: Collections

    /// The provider's collections, the default one first, then in the provider's order.
    package func collections() throws(SecretServiceImportError) -> [SecretServiceSourceCollection] {
        guard let paths = try property(Self.servicePath, Self.serviceInterface, "Collections").strings else {
            throw SecretServiceImportError("The provider's Collections property is not a list of object paths.")
        }
        guard paths.count <= Self.maximumCollections else {
            throw SecretServiceImportError("The provider lists \(paths.count) collections; at most \(Self.maximumCollections) are imported.")
        }
        var defaultPath: String?
        if let answer = try? call(Self.servicePath, Self.serviceInterface, "ReadAlias", [.string("default")]).first?.string, answer != "/" {
            defaultPath = answer
        }
        var out: [SecretServiceSourceCollection] = []
        for path in paths {
            let properties = try allProperties(path, Self.collectionInterface)
            out.append(
                SecretServiceSourceCollection(
                    path: path, label: properties["Label"]?.string ?? "",
                    dates: Self.dates(properties), isDefault: path == defaultPath,
                    locked: properties["Locked"]?.bool ?? false))
        }
        return out.filter(\.isDefault) + out.filter { !$0.isDefault }
    }

    /// Unlocks `collection`: through `Unlock`, and when the provider answers with a prompt, through the prompt
    /// (`Prompt("")`, then its `Completed` signal, waited for ``interactiveTimeout``).
    ///
    /// - Returns: Whether the collection is unlocked now; false when the person dismissed the prompt.
    package func unlock(_ collection: SecretServiceSourceCollection) throws(SecretServiceImportError) -> Bool {
        let reply = try call(
            Self.servicePath, Self.serviceInterface, "Unlock",
            [.array(elementSignature: "o", [.objectPath(collection.path)])], timeout: Self.interactiveTimeout)
        guard reply.count == 2, let unlocked = reply[0].strings, let prompt = reply[1].string else {
            throw SecretServiceImportError("The provider answered Unlock with something else.")
        }
        if unlocked.contains(collection.path) { return true }
        guard prompt != "/" else { return false }
        let match: DBusSignalMatch
        do {
            match = try bus.subscribe(sender: owner, path: prompt, interface: Self.promptInterface, member: "Completed")
        } catch {
            throw SecretServiceImportError("Waiting for the unlock prompt failed: \(error.message)")
        }
        _ = try call(prompt, Self.promptInterface, "Prompt", [.string("")])
        let deadline = ContinuousClock.now + Self.interactiveTimeout
        let signal: DBusSignal?
        do {
            signal = try bus.nextSignal(from: match, until: deadline)
        } catch {
            throw SecretServiceImportError("Waiting for the unlock prompt failed: \(error.message)")
        }
        guard let signal else {
            _ = try? call(prompt, Self.promptInterface, "Dismiss")
            return false
        }
        if signal.arguments.first?.bool == true { return false }
        return try property(collection.path, Self.collectionInterface, "Locked").bool == false
    }

    /// The object paths of `collection`'s items.
    package func itemPaths(of collection: SecretServiceSourceCollection) throws(SecretServiceImportError) -> [String] {
        guard let paths = try property(collection.path, Self.collectionInterface, "Items").strings else {
            throw SecretServiceImportError("The Items property of collection \"\(collection.label)\" is not a list of object paths.")
        }
        guard paths.count <= Self.maximumItemsPerCollection else {
            throw SecretServiceImportError("Collection \"\(collection.label)\" has \(paths.count) items; at most \(Self.maximumItemsPerCollection) are imported from one collection.")
        }
        return paths
    }

    // MARK: Items

    /// Reads the items at `paths` (label, attributes, dates, and their secrets with one `GetSecrets`).
    ///
    /// - Returns: The items read, in the order of `paths`, and how many could not be read (gone meanwhile, still
    ///   locked, a secret over the bound or that does not decrypt).
    package func readItems(_ paths: [String]) throws(SecretServiceImportError) -> (items: [SecretServiceImportItem], failed: Int) {
        guard let session else { throw SecretServiceImportError("No session is open with the provider.") }
        var secrets: [String: DBusValue] = [:]
        do {
            secrets = try getSecrets(paths, session: session.path)
        } catch {
            // One item the provider refuses fails the whole call: ask for each alone.
            for path in paths {
                if let one = try? getSecrets([path], session: session.path) { secrets.merge(one) { first, _ in first } }
            }
        }
        var items: [SecretServiceImportItem] = []
        var failed = 0
        for path in paths {
            guard let secret = secrets[path], let properties = try? allProperties(path, Self.itemInterface),
                let (value, contentType) = try? open(secret, with: session.crypto)
            else {
                failed += 1
                continue
            }
            var attributes: [String: String] = [:]
            if case .array(_, let entries)? = properties["Attributes"].map(Self.unwrapped) {
                for case .dictEntry(let name, let value) in entries {
                    if let name = name.string, let value = value.string { attributes[name] = value }
                }
            }
            items.append(
                SecretServiceImportItem(
                    label: properties["Label"]?.string ?? "", attributes: attributes,
                    secret: Data(value), contentType: contentType, dates: Self.dates(properties)))
        }
        return (items, failed)
    }

    private func getSecrets(_ paths: [String], session: String) throws(SecretServiceImportError) -> [String: DBusValue] {
        let reply = try call(
            Self.servicePath, Self.serviceInterface, "GetSecrets",
            [.array(elementSignature: "o", paths.map { .objectPath($0) }), .objectPath(session)],
            timeout: Self.interactiveTimeout)
        guard case .array(_, let entries)? = reply.first else {
            throw SecretServiceImportError("The provider answered GetSecrets with something else.")
        }
        var out: [String: DBusValue] = [:]
        for case .dictEntry(let path, let secret) in entries {
            if let path = path.string { out[path] = secret }
        }
        return out
    }

    /// A secret's value and content type from its structure `(oayays)` (or `(oayay)`, the specification's first
    /// version, as `text/plain`).
    private func open(_ secret: DBusValue, with crypto: SecretSessionCrypto) throws(SecretServiceImportError) -> ([UInt8], String) {
        guard case .structure(let fields) = secret, fields.count == 3 || fields.count == 4,
            case .bytes(let parameters) = fields[1], case .bytes(let value) = fields[2]
        else {
            throw SecretServiceImportError("A secret is not a (oayays) structure.")
        }
        // Checked before decrypting: AES-CBC adds at most one block.
        guard value.count <= SecretServiceImportItem.maximumSecretLength + SecretSessionCrypto.blockSize else {
            throw SecretServiceImportError("A secret is over the bound.")
        }
        let contentType = fields.count == 4 ? fields[3].string ?? "text/plain" : "text/plain"
        do {
            return (try crypto.open(parameters: parameters, value: value), contentType)
        } catch {
            throw SecretServiceImportError("A secret did not decrypt.")
        }
    }

    // MARK: Calls

    private func call(
        _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration? = nil
    ) throws(SecretServiceImportError) -> [DBusValue] {
        do {
            return try bus.call(destination: owner, path: path, interface: interface, member: member, arguments, timeout: timeout)
        } catch {
            throw SecretServiceImportError("The provider failed \(interface).\(member): \(error.message)")
        }
    }

    private func property(_ path: String, _ interface: String, _ name: String) throws(SecretServiceImportError) -> DBusValue {
        do {
            return try bus.property(destination: owner, path: path, interface: interface, name: name)
        } catch {
            throw SecretServiceImportError("The provider did not give \(interface).\(name): \(error.message)")
        }
    }

    private func allProperties(_ path: String, _ interface: String) throws(SecretServiceImportError) -> [String: DBusValue] {
        let reply = try call(path, Self.propertiesInterface, "GetAll", [.string(interface)])
        guard case .array(_, let entries)? = reply.first else {
            throw SecretServiceImportError("The provider answered GetAll with something else.")
        }
        var out: [String: DBusValue] = [:]
        for case .dictEntry(let name, let value) in entries {
            if let name = name.string { out[name] = Self.unwrapped(value) }
        }
        return out
    }

    private static func unwrapped(_ value: DBusValue) -> DBusValue {
        if case .variant(let inner) = value { return unwrapped(inner) }
        return value
    }

    /// `Created` and `Modified` (seconds since 1970, `t`) from an object's properties, kept within
    /// ``ItemDates/earliest``…``ItemDates/latest``; now for one that is missing.
    static func dates(_ properties: [String: DBusValue]) -> ItemDates {
        let now = Date()
        func date(_ name: String) -> Date {
            guard case .uint64(let seconds)? = properties[name].map(unwrapped) else { return now }
            let date = Date(timeIntervalSince1970: Double(seconds))
            return min(max(date, ItemDates.earliest), ItemDates.latest)
        }
        return ItemDates(created: date("Created"), modified: date("Modified"))
    }
}

@available(*, unavailable, message: "a Secret Service source uses one D-Bus connection, from one thread at a time")
extension SecretServiceSource: Sendable {}
