import Foundation
import KeychainCore

extension Keychain {
    /// The attributes of one item, as ``Keychain/attributes(for:)`` reads them.
    public struct Attributes: Sendable, Hashable {
        /// The item's key (`kSecAttrAccount`).
        public let account: String
        /// The service of a generic password (`kSecAttrService`); `nil` for an internet password.
        public let service: String?
        /// The server of an internet password (`kSecAttrServer`); `nil` for a generic password.
        public let server: String?
        /// The protocol of an internet password (`kSecAttrProtocol`), if it has a known one.
        public let `protocol`: KeychainInternetProtocol?
        /// The port of an internet password (`kSecAttrPort`), if it has one.
        public let port: Int?
        /// The path of an internet password (`kSecAttrPath`), if it has one.
        public let path: String?
        /// The authentication type of an internet password (`kSecAttrAuthenticationType`), if it has a known one.
        public let authenticationType: KeychainAuthenticationType?
        /// The security domain of an internet password (`kSecAttrSecurityDomain`), if it has one.
        public let securityDomain: String?
        /// The item's label (`kSecAttrLabel`), if it has one.
        public let label: String?
        /// The item's comment (`kSecAttrComment`), if it has one.
        public let comment: String?
        /// The access group the item belongs to (`kSecAttrAccessGroup`).
        public let accessGroup: String
        /// When the item's secret can be read (`kSecAttrAccessible`).
        public let accessibility: KeychainAccessibility
        /// The item's access control (`kSecAttrAccessControl`), if it has one.
        public let accessControl: KeychainAccessControl?
        /// Whether the item is synchronizable (`kSecAttrSynchronizable`).
        public let synchronizable: Bool
        /// The programs the item trusts to read it besides its access group's (see ``KeychainTrustedApplication``).
        public let trustedApplications: [KeychainTrustedApplication]
        /// When the item was added (`kSecAttrCreationDate`).
        public let creationDate: Date
        /// When the item was last changed (`kSecAttrModificationDate`).
        public let modificationDate: Date

        init(_ item: FoundItem) {
            let a = item.attributes
            func text(_ code: String) -> String? {
                guard let value = a[code]?.stringValue, !value.isEmpty else { return nil }
                return value
            }
            func date(_ code: String) -> Date {
                if case .date(let d)? = a[code] { return d }
                return Date(timeIntervalSinceReferenceDate: 0)
            }
            account = a["acct"]?.stringValue ?? ""
            let isInternet = item.itemClass == .internetPassword
            service = isInternet ? nil : (a["svce"]?.stringValue ?? "")
            server = isInternet ? (a["srvr"]?.stringValue ?? "") : nil
            `protocol` = text("ptcl").flatMap(KeychainInternetProtocol.init(rawValue:))
            if let p = a["port"]?.intValue, p != 0, let port = Int(exactly: p) {
                self.port = port
            } else {
                port = nil
            }
            path = text("path")
            authenticationType = text("atyp").flatMap(KeychainAuthenticationType.init(rawValue:))
            securityDomain = text("sdmn")
            label = a["labl"]?.stringValue
            comment = a["icmt"]?.stringValue
            accessGroup = a["agrp"]?.stringValue ?? ""
            accessibility = text("pdmn").flatMap(ProtectionClass.init(rawValue:)).map(KeychainAccessibility.init) ?? .whenUnlocked
            if case .data(let bytes)? = a["accc"], let control = AccessControl(encoded: bytes) {
                accessControl = KeychainAccessControl(control)
            } else {
                accessControl = nil
            }
            synchronizable = a["sync"]?.intValue == 1
            trustedApplications = KeychainTrustedApplication.list(a)
            creationDate = date("cdat")
            modificationDate = date("mdat")
        }
    }
}
