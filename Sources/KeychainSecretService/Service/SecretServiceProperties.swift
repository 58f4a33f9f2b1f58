import Foundation
import KeychainCore
import KeychainDBus

/// `org.freedesktop.DBus.Properties` of the Secret Service's objects.
extension SecretServiceProvider {
    func properties(_ call: DBusMethodCall, object: SecretObjectPath, caller: SecretServiceCaller) throws(SecretServiceError) -> [DBusValue] {
        switch call.member {
        case "Get":
            try expect(call, "ss")
            guard case .string(let interface) = call.arguments[0], case .string(let name) = call.arguments[1] else { throw .invalid("Get takes an interface and a name.") }
            let all = try values(of: object, interface: interface, caller: caller, path: call.path)
            guard let found = all.first(where: { $0.0 == name }) else {
                throw SecretServiceError(name: SecretServiceError.unknownProperty, message: "\(interface) has no property \(name) at \(call.path).")
            }
            return [.variant(found.1)]
        case "GetAll":
            try expect(call, "s")
            guard case .string(let interface) = call.arguments[0] else { throw .invalid("GetAll takes an interface.") }
            return [SecretValues.propertyDictionary(try values(of: object, interface: interface, caller: caller, path: call.path))]
        case "Set":
            try expect(call, "ssv")
            guard case .string(let interface) = call.arguments[0], case .string(let name) = call.arguments[1],
                case .variant(let value) = call.arguments[2]
            else { throw .invalid("Set takes an interface, a name and a variant.") }
            try set(object, interface: interface, name: name, value: value, caller: caller, path: call.path)
            return []
        default:
            throw unknownMethod(call)
        }
    }

    /// The properties of `object`'s `interface` that `caller` may read now (an empty interface name: all of them).
    private func values(of object: SecretObjectPath, interface: String, caller: SecretServiceCaller, path: String) throws(SecretServiceError) -> [(String, DBusValue)] {
        func check(_ expected: String) throws(SecretServiceError) {
            guard interface.isEmpty || interface == expected else {
                throw SecretServiceError(name: SecretServiceError.unknownInterface, message: "\(path) has no interface \(interface).")
            }
        }
        switch object {
        case .service:
            try check(Self.serviceInterface)
            return [("Collections", SecretValues.paths(try visibleCollections(caller).map(\.path)))]
        case .collection(let name):
            try check(Self.collectionInterface)
            guard let collection = try visibleCollection(name, caller: caller) else { throw .noObject(path) }
            let open = try isUnlocked(collection, for: caller)
            var out: [(String, DBusValue)] = []
            // Listed while locked too, as gnome-keyring lists a locked keyring's items (from what the keychain
            // kept across the lock, see SecretServiceLocks); none before the keychain's first unlock.
            let items: [String]
            if open {
                items = try keychain { () throws(KeychainError) in try store.items(in: collection) }.map(\.path)
            } else {
                items = ((try? store.items(in: collection)) ?? []).map(\.path)
            }
            out.append(("Items", SecretValues.paths(items)))
            out.append(("Label", .string(collection.label)))
            out.append(("Locked", .bool(!open)))
            out.append(("Created", SecretValues.timestamp(collection.created)))
            out.append(("Modified", SecretValues.timestamp(collection.modified)))
            return out
        case .item(let name, let id):
            try check(Self.itemInterface)
            guard let collection = try visibleCollection(name, caller: caller),
                let item = try keychain({ () throws(KeychainError) in try store.item(id, in: collection) })
            else { throw .noObject(path) }
            // Label and attributes are not secrets (the spec's, gnome-keyring's): readable while locked, so that a
            // client can show what it found before it asks to unlock it. SECURITY.md says what that exposes.
            let open = try isUnlocked(collection, for: caller)
            var out: [(String, DBusValue)] = [("Locked", .bool(!open))]
            out.append(("Attributes", SecretValues.stringDictionary(item.attributes)))
            out.append(("Label", .string(item.label)))
            out.append(("Created", SecretValues.timestamp(item.created)))
            out.append(("Modified", SecretValues.timestamp(item.modified)))
            return out
        case .session(let id):
            try check(Self.sessionInterface)
            guard sessions.session(id, caller: caller.busName) != nil else { throw .noObject(path) }
            return []
        case .prompt(let id):
            try check(Self.promptInterface)
            guard prompts.exists(id) else { throw .noObject(path) }
            return []
        }
    }

    private func set(
        _ object: SecretObjectPath, interface: String, name: String, value: DBusValue,
        caller: SecretServiceCaller, path: String
    ) throws(SecretServiceError) {
        switch (object, interface, name) {
        case (.collection(let collectionName), Self.collectionInterface, "Label"):
            guard case .string(let label) = value else { throw .invalid("Label is a string.") }
            guard let collection = try visibleCollection(collectionName, caller: caller) else { throw .noObject(path) }
            try requireUnlocked(collection, for: caller)
            try keychain { () throws(KeychainError) in try store.setLabel(label, ofCollection: collection.id) }
            signal(SecretObjectPath.root, Self.serviceInterface, "CollectionChanged", [.objectPath(collection.path)])
        case (.item(let collectionName, let id), Self.itemInterface, "Label"), (.item(let collectionName, let id), Self.itemInterface, "Attributes"):
            guard let collection = try visibleCollection(collectionName, caller: caller),
                try keychain({ () throws(KeychainError) in try store.item(id, in: collection) }) != nil
            else { throw .noObject(path) }
            try requireUnlocked(collection, for: caller)
            if name == "Label" {
                guard case .string(let label) = value else { throw .invalid("Label is a string.") }
                try keychain { () throws(KeychainError) in try store.setLabel(label, ofItem: id, in: collection) }
            } else {
                guard let attributes = SecretValues.stringDictionary(value) else { throw .invalid("Attributes is a{ss}.") }
                try keychain { () throws(KeychainError) in try store.setAttributes(attributes, ofItem: id, in: collection) }
            }
        default:
            _ = try values(of: object, interface: interface, caller: caller, path: path)
            throw SecretServiceError(name: SecretServiceError.propertyReadOnly, message: "\(interface).\(name) cannot be set at \(path).")
        }
    }
}
