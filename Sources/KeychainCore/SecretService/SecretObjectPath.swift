/// The objects of the Secret Service, as their D-Bus object paths name them.
///
/// `/org/freedesktop/secrets` is the service; `/org/freedesktop/secrets/collection/ID` a collection and
/// `…/collection/ID/ITEM` one of its items; `/org/freedesktop/secrets/aliases/NAME` (and `…/aliases/NAME/ITEM`) the
/// same objects reached through an alias, as clients address the default collection directly;
/// `/org/freedesktop/secrets/session/ID` and `/org/freedesktop/secrets/prompt/ID` a client's session and prompt.
package enum SecretObjectPath: Sendable, Hashable {
    /// How a collection is named in a path: by its identifier, or by an alias.
    package enum CollectionName: Sendable, Hashable {
        case id(String)
        case alias(String)
    }

    case service
    case collection(CollectionName)
    case item(CollectionName, String)
    case session(String)
    case prompt(String)

    /// The service's path.
    package static let root = "/org/freedesktop/secrets"

    /// Parses `path`; nil when it names nothing of the service (or an element is not a valid path element).
    package init?(_ path: String) {
        guard path == Self.root || path.hasPrefix(Self.root + "/") else { return nil }
        if path == Self.root { self = .service; return }
        let parts = path.dropFirst(Self.root.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.allSatisfy(Self.isElement) else { return nil }
        switch (parts.first, parts.count) {
        case ("collection", 2): self = .collection(.id(parts[1]))
        case ("collection", 3): self = .item(.id(parts[1]), parts[2])
        case ("aliases", 2): self = .collection(.alias(parts[1]))
        case ("aliases", 3): self = .item(.alias(parts[1]), parts[2])
        case ("session", 2): self = .session(parts[1])
        case ("prompt", 2): self = .prompt(parts[1])
        default: return nil
        }
    }

    /// The object path.
    package var path: String {
        switch self {
        case .service: Self.root
        case .collection(let name): Self.collectionPath(name)
        case .item(let name, let item): Self.collectionPath(name) + "/" + item
        case .session(let id): Self.root + "/session/" + id
        case .prompt(let id): Self.root + "/prompt/" + id
        }
    }

    private static func collectionPath(_ name: CollectionName) -> String {
        switch name {
        case .id(let id): root + "/collection/" + id
        case .alias(let alias): root + "/aliases/" + alias
        }
    }

    /// The path of collection `id` (never through an alias).
    package static func collection(_ id: String) -> String { root + "/collection/" + id }

    /// The path of item `item` of collection `id`.
    package static func item(_ id: String, _ item: String) -> String { root + "/collection/" + id + "/" + item }

    /// Whether `element` may be one element of an object path: 1 to 255 of `[A-Za-z0-9_]`.
    package static func isElement(_ element: String) -> Bool {
        guard !element.isEmpty, element.utf8.count <= 255 else { return false }
        return element.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    /// A path element made from a label, as gnome-keyring names collections: lower case, every character that
    /// cannot be in a path replaced by `_` (at most 64 of them); `fallback` when nothing is left.
    package static func element(fromLabel label: String, fallback: String) -> String {
        var out = ""
        for scalar in label.lowercased().unicodeScalars.prefix(64) {
            out += isElement(String(scalar)) ? String(scalar) : "_"
        }
        return out.isEmpty || out.allSatisfy({ $0 == "_" }) ? fallback : out
    }
}
