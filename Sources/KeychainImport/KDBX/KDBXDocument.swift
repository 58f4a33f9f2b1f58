import Foundation

import KeychainCore

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The XML inside a KDBX file, mapped to Secret Service items the way KeePassXC's Secret Service integration shows
/// entries.
///
/// Each entry outside the recycle bin becomes an item labelled by its title, whose secret is its password and whose
/// attributes are its title, user name, URL and notes (each left out when empty), `Path` (the group names from the
/// root group down, joined by "/"), `Uuid` (32 lowercase hexadecimal digits) and every other string field by its
/// name, protected or not, empty or not. Entry history is left out.
enum KDBXDocument {
    /// The longest attribute value kept, in UTF-8 bytes.
    static let maximumAttributeBytes = 16_384
    /// The most attributes an item may have.
    static let maximumAttributes = 128
    /// The deepest XML nesting accepted.
    static let maximumDepth = 64

    /// The collection held in `xml`, whose protected values are decrypted with `innerStream`.
    static func collection(xml: [UInt8], innerStream: KDBXInnerStream, fallbackLabel: String) throws(KeychainError) -> ImportedCollection {
        let (root, protected) = try parse(xml)
        try unprotect(protected, stream: innerStream)
        guard root.name == "KeePassFile" else { throw KDBXFailure.damaged("its content is not a KeePass document") }
        let meta = root.child("Meta")
        let databaseName = meta?.child("DatabaseName")?.text ?? ""
        let recycleBinEnabled = meta?.child("RecycleBinEnabled")?.text.lowercased() == "true"
        let recycleBin = meta?.child("RecycleBinUUID")?.text.trimmingCharacters(in: .whitespaces)
        guard let rootGroup = root.child("Root")?.child("Group") else { throw KDBXFailure.damaged("its content has no root group") }

        var collection = ImportedCollection(label: databaseName.isEmpty ? fallbackLabel : databaseName)
        collection.dates = dates(of: rootGroup)
        var walker = Walker(recycleBin: recycleBinEnabled ? recycleBin.flatMap(uuidBytes) : nil)
        walker.visit(group: rootGroup, parentPath: nil)
        collection.items = walker.items
        collection.notImported = walker.notImported
        return collection
    }

    // MARK: - Tree

    /// One XML element: its name, attributes, children and text.
    final class Node {
        let name: String
        let attributes: [String: String]
        var children: [Node] = []
        var text = ""

        init(name: String, attributes: [String: String]) {
            self.name = name
            self.attributes = attributes
        }

        /// The first child element named `name`.
        func child(_ name: String) -> Node? { children.first { $0.name == name } }
    }

    /// Builds the element tree, refusing nesting deeper than `maximumDepth`.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [Node] = []
        var root: Node?
        var tooDeep = false
        /// Protected values in document order.
        var protected: [Node] = []

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            guard stack.count < KDBXDocument.maximumDepth else {
                tooDeep = true
                parser.abortParsing()
                return
            }
            let node = Node(name: elementName, attributes: attributes)
            if let parent = stack.last {
                parent.children.append(node)
                // Text between child elements is layout; drop what was collected.
                parent.text = ""
            } else if root == nil {
                root = node
            }
            stack.append(node)
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if let node = stack.last, node.children.isEmpty { node.text += string }
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            if let node = stack.last, node.children.isEmpty { node.text += String(decoding: CDATABlock, as: UTF8.self) }
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            guard let node = stack.popLast() else { return }
            if !node.children.isEmpty { node.text = "" }
            if node.attributes["Protected"]?.lowercased() == "true" { protected.append(node) }
        }
    }

    /// The element tree of `xml`, and its protected values in document order.
    static func parse(_ xml: [UInt8]) throws(KeychainError) -> (root: Node, protected: [Node]) {
        let builder = TreeBuilder()
        // From a stream, which the parser reads a piece at a time: given the whole document at once, Foundation's
        // parser on Linux fails on any over 10 MB (a database of about 10,000 entries).
        let parser = XMLParser(stream: InputStream(data: Data(xml)))
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let parsed = parser.parse()
        if builder.tooDeep { throw KDBXFailure.damaged("its content nests deeper than \(maximumDepth) levels") }
        guard parsed, let root = builder.root else {
            let reason = parser.parserError.map { " (\($0.localizedDescription))" } ?? ""
            throw KDBXFailure.damaged("its content is not well-formed XML\(reason)")
        }
        return (root, builder.protected)
    }

    /// Replaces the text of every protected value (base64 of the value XORed with the inner stream, in document
    /// order) by the value itself.
    static func unprotect(_ nodes: [Node], stream: KDBXInnerStream) throws(KeychainError) {
        var lengths: [Int] = []
        var joined: [UInt8] = []
        for node in nodes {
            let compact = node.text.filter { !$0.isWhitespace }
            guard let decoded = Data(base64Encoded: compact) else { throw KDBXFailure.damaged("a protected value is not valid base64") }
            lengths.append(decoded.count)
            joined += decoded
        }
        let plain = try stream.apply(joined)
        var offset = 0
        for (node, length) in zip(nodes, lengths) {
            node.text = String(decoding: plain[offset..<(offset + length)], as: UTF8.self)
            offset += length
        }
    }

    // MARK: - Mapping

    /// Walks the groups, collecting items and what was left out.
    private struct Walker {
        let recycleBin: [UInt8]?
        var items: [SecretServiceImportItem] = []
        var notImported: [String] = []

        mutating func visit(group: Node, parentPath: String?) {
            if let recycleBin, !recycleBin.allSatisfy({ $0 == 0 }),
                let uuid = group.child("UUID").flatMap({ KDBXDocument.uuidBytes($0.text) }), uuid == recycleBin
            {
                return
            }
            let name = group.child("Name")?.text ?? ""
            let path = parentPath.map { "\($0)/\(name)" } ?? name
            for child in group.children {
                switch child.name {
                case "Entry": add(entry: child, path: path)
                case "Group": visit(group: child, parentPath: path)
                default: continue
                }
            }
        }

        mutating func add(entry: Node, path: String) {
            var fields: [(key: String, value: String)] = []
            var attachments: [String] = []
            for child in entry.children {
                if child.name == "String", let key = child.child("Key")?.text {
                    fields.append((key, child.child("Value")?.text ?? ""))
                } else if child.name == "Binary" {
                    attachments.append(child.child("Key")?.text ?? "")
                }
            }
            func field(_ key: String) -> String? { fields.first { $0.key == key }?.value }
            let title = field("Title") ?? ""
            let label = title.isEmpty ? "(untitled)" : title
            let place = "entry '\(label)' (\(path))"

            var attributes: [String: String] = [:]
            var order: [(String, String)] = []
            for key in ["Title", "UserName", "URL", "Notes"] {
                if let value = field(key), !value.isEmpty { order.append((key, value)) }
            }
            order.append(("Path", path))
            let uuid = entry.child("UUID").flatMap { KDBXDocument.uuidBytes($0.text) } ?? []
            order.append(("Uuid", KDBXHex.string(uuid)))
            let standard: Set<String> = ["Title", "UserName", "URL", "Notes", "Password"]
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !standard.contains(key) {
                if key == "Path" || key == "Uuid" {
                    notImported.append("\(place): field \(key) was not imported (the name is taken by the entry's \(key.lowercased()))")
                    continue
                }
                if attributes[key] != nil || order.contains(where: { $0.0 == key }) { continue }
                order.append((key, value))
            }
            var overLimit: [String] = []
            for (key, value) in order {
                if value.utf8.count > KDBXDocument.maximumAttributeBytes {
                    notImported.append("\(place): field \(key) is over 16 KiB and was not imported")
                } else if attributes.count >= KDBXDocument.maximumAttributes {
                    overLimit.append(key)
                } else {
                    attributes[key] = value
                }
            }
            if !overLimit.isEmpty {
                notImported.append("\(place): \(overLimit.count) fields over the limit of \(KDBXDocument.maximumAttributes) attributes were not imported (\(overLimit.joined(separator: ", ")))")
            }
            for attachment in attachments {
                notImported.append("\(place): attachment '\(attachment)' not imported")
            }
            let created = KDBXDocument.date(entry.child("Times")?.child("CreationTime")?.text)
            let modified = KDBXDocument.date(entry.child("Times")?.child("LastModificationTime")?.text)
            let now = Date()
            let dates = ItemDates(created: created ?? modified ?? now, modified: modified ?? created ?? now)
            items.append(
                SecretServiceImportItem(
                    label: label, attributes: attributes, secret: Data((field("Password") ?? "").utf8),
                    contentType: "text/plain", dates: dates))
        }
    }

    /// The 16 bytes of a base64 UUID, nil if it is not one.
    static func uuidBytes(_ text: String) -> [UInt8]? {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 16 else { return nil }
        return Array(data)
    }

    /// A group's creation and modification times, nil if it has neither.
    static func dates(of group: Node) -> ItemDates? {
        let created = date(group.child("Times")?.child("CreationTime")?.text)
        let modified = date(group.child("Times")?.child("LastModificationTime")?.text)
        guard let first = created ?? modified else { return nil }
        return ItemDates(created: first, modified: modified ?? first)
    }

    /// Seconds from 0001-01-01T00:00:00Z to 1970-01-01T00:00:00Z.
    static let secondsFromYearOneTo1970: Int64 = 62_135_596_800

    /// A KDBX time: base64 of a little-endian Int64 count of seconds since 0001-01-01T00:00:00Z (KDBX 4), or ISO 8601
    /// text (KDBX 3.1 and XML exports). Nil when absent or unreadable.
    static func date(_ text: String?) -> Date? {
        guard let text = text?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        if text.contains("-") && text.contains(":") {
            if let date = try? Date(text, strategy: .iso8601) { return date }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            return nil
        }
        guard let data = Data(base64Encoded: text), data.count == 8,
            let raw = KDBXLittleEndian.value(Array(data), width: 8)
        else { return nil }
        let seconds = Int64(bitPattern: raw)
        guard seconds >= 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds - secondsFromYearOneTo1970))
    }
}
