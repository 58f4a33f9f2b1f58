import KeychainCore
import KeychainDBus

/// `org.freedesktop.DBus.Introspectable`: each object's interfaces as the specification gives them, and the child
/// nodes the caller may see.
extension SecretServiceProvider {
    static let standardInterfaces = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
            <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/></method>
            <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
          </interface>

        """

    static let serviceXML = """
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession"><arg name="algorithm" type="s" direction="in"/><arg name="input" type="v" direction="in"/><arg name="output" type="v" direction="out"/><arg name="result" type="o" direction="out"/></method>
            <method name="CreateCollection"><arg name="properties" type="a{sv}" direction="in"/><arg name="alias" type="s" direction="in"/><arg name="collection" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="locked" type="ao" direction="out"/></method>
            <method name="Unlock"><arg name="objects" type="ao" direction="in"/><arg name="unlocked" type="ao" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <method name="Lock"><arg name="objects" type="ao" direction="in"/><arg name="locked" type="ao" direction="out"/><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecrets"><arg name="items" type="ao" direction="in"/><arg name="session" type="o" direction="in"/><arg name="secrets" type="a{o(oayays)}" direction="out"/></method>
            <method name="ReadAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="out"/></method>
            <method name="SetAlias"><arg name="name" type="s" direction="in"/><arg name="collection" type="o" direction="in"/></method>
            <signal name="CollectionCreated"><arg name="collection" type="o"/></signal>
            <signal name="CollectionDeleted"><arg name="collection" type="o"/></signal>
            <signal name="CollectionChanged"><arg name="collection" type="o"/></signal>
            <property name="Collections" type="ao" access="read"/>
          </interface>

        """

    static let collectionXML = """
          <interface name="org.freedesktop.Secret.Collection">
            <method name="Delete"><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/><arg name="results" type="ao" direction="out"/></method>
            <method name="CreateItem"><arg name="properties" type="a{sv}" direction="in"/><arg name="secret" type="(oayays)" direction="in"/><arg name="replace" type="b" direction="in"/><arg name="item" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <signal name="ItemCreated"><arg name="item" type="o"/></signal>
            <signal name="ItemDeleted"><arg name="item" type="o"/></signal>
            <signal name="ItemChanged"><arg name="item" type="o"/></signal>
            <property name="Items" type="ao" access="read"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Locked" type="b" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>

        """

    static let itemXML = """
          <interface name="org.freedesktop.Secret.Item">
            <method name="Delete"><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecret"><arg name="session" type="o" direction="in"/><arg name="secret" type="(oayays)" direction="out"/></method>
            <method name="SetSecret"><arg name="secret" type="(oayays)" direction="in"/></method>
            <property name="Locked" type="b" access="read"/>
            <property name="Attributes" type="a{ss}" access="readwrite"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>

        """

    static let sessionXML = """
          <interface name="org.freedesktop.Secret.Session">
            <method name="Close"/>
          </interface>

        """

    static let promptXML = """
          <interface name="org.freedesktop.Secret.Prompt">
            <method name="Prompt"><arg name="window-id" type="s" direction="in"/></method>
            <method name="Dismiss"/>
            <signal name="Completed"><arg name="dismissed" type="b"/><arg name="result" type="v"/></signal>
          </interface>

        """

    /// The introspection document of `path` for `caller`.
    func introspect(_ path: String, caller: SecretServiceCaller) throws(SecretServiceError) -> String {
        var interfaces = ""
        var children: [String] = []
        switch path {
        case "/": children = ["org"]
        case "/org": children = ["freedesktop"]
        case "/org/freedesktop": children = ["portal", "secrets"]
        case "/org/freedesktop/portal": children = ["desktop"]
        case SecretObjectPath.root + "/collection":
            children = try visibleCollections(caller).map(\.id)
        case SecretObjectPath.root + "/aliases":
            children = try keychain { () throws(KeychainError) in try store.aliases() }.keys.sorted()
        case SecretObjectPath.root + "/session", SecretObjectPath.root + "/prompt":
            break
        default:
            switch SecretObjectPath(path) {
            case .service?:
                interfaces = Self.serviceXML
                children = ["collection", "aliases"]
            case .collection(let name)?:
                guard let collection = try visibleCollection(name, caller: caller) else { throw .noObject(path) }
                interfaces = Self.collectionXML
                if try isUnlocked(collection, for: caller) {
                    children = try keychain { () throws(KeychainError) in try store.items(in: collection) }.map(\.id)
                } else {
                    children = ((try? store.items(in: collection)) ?? []).map(\.id)  // as Collection.Items lists them
                }
            case .item(let name, let id)?:
                guard let collection = try visibleCollection(name, caller: caller),
                    try keychain({ () throws(KeychainError) in try store.item(id, in: collection) }) != nil
                else { throw .noObject(path) }
                interfaces = Self.itemXML
            case .session(let id)?:
                guard sessions.session(id, caller: caller.busName) != nil else { throw .noObject(path) }
                interfaces = Self.sessionXML
            case .prompt(let id)?:
                guard prompts.exists(id) else { throw .noObject(path) }
                interfaces = Self.promptXML
            case nil:
                throw SecretServiceError(name: SecretServiceError.unknownObject, message: "No object at \(path).")
            }
        }
        return Self.introspectionDocument(interfaces, children: children)
    }

    /// The introspection document of an object with `interfaces` (besides the standard ones) and `children`.
    static func introspectionDocument(_ interfaces: String, children: [String]) -> String {
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>

            """
        xml += standardInterfaces + interfaces
        for child in children { xml += "  <node name=\"\(child)\"/>\n" }
        xml += "</node>\n"
        return xml
    }
}
