import Foundation

/// The per-application secrets of xdg-desktop-portal's Secret portal (`org.freedesktop.portal.Secret`): one random
/// secret per sandboxed application, which the application derives its own keys from (libsecret's file backend in
/// a Flatpak does).
///
/// Each is a generic password in the application's own access group (its Flatpak app ID, the group keychaind gives
/// that application when it calls keychaind itself), service ``service``, account ``account``, readable after the
/// first unlock (applications ask for it as they start), never synced and never restored to another device.
extension SecretStore {
    /// The service of a portal secret.
    package static let portalService = "org.freedesktop.portal.Secret"
    /// The account of a portal secret.
    package static let portalAccount = "master"
    /// The length of a portal secret, in bytes.
    package static let portalSecretLength = 64

    /// Whether `appID` is an application ID as Flatpak makes them (`org.example.App`: 2 to 255 bytes of elements
    /// separated by dots, at least two elements, none starting with a digit).
    package static func isValidAppID(_ appID: String) -> Bool {
        let bytes = Array(appID.utf8)
        guard bytes.count <= 255, !bytes.isEmpty else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        for element in elements {
            guard let first = element.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            for byte in element {
                let allowed =
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                guard allowed else { return false }
            }
        }
        return true
    }

    /// The portal secret of the application `appID`, made (random) the first time it is asked for.
    package func portalSecret(appID: String) throws(KeychainError) -> [UInt8] {
        guard Self.isValidAppID(appID) else {
            throw KeychainError(code: .invalidParameter, message: "'\(appID.prefix(64))' is not an application ID.")
        }
        let q = query(group: appID, service: Self.portalService, account: Self.portalAccount)
        var find = q
        find.returns.data = true
        do {
            if let data = try engine.find(find, caller: everything).first?.data, data.count == Self.portalSecretLength {
                return Array(data)
            }
        } catch  where error.code == .itemNotFound {}
        var add = q
        add.attributes["labl"] = .string("Secret portal: \(appID)")
        add.attributes["pdmn"] = .string(ProtectionClass.afterFirstUnlockThisDeviceOnly.rawValue)
        let secret = random(Self.portalSecretLength)
        add.valueData = Data(secret)
        do {
            _ = try engine.add(add, caller: everything)
            return secret
        } catch  where error.code == .duplicateItem {
            // Made meanwhile by another call: that one is the application's secret.
            guard let data = try engine.find(find, caller: everything).first?.data else { throw KeychainError.notFound() }
            return Array(data)
        }
    }
}
