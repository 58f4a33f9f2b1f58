import Foundation

/// One domain's trust settings in Apple's external representation (what `SecTrustSettingsCreateExternalRepresentation`
/// returns and `security trust-settings-export` writes): an XML property list with `trustVersion` (1) and
/// `trustList`, a dictionary keyed by each certificate's SHA-1 in upper-case hex whose values hold `issuerName`,
/// `serialNumber`, `modDate` and the `trustSettings` array of usage constraints.
package struct TrustSettingsFile: Sendable, Equatable {
    /// The records, by the certificate's upper-case SHA-1 hex.
    package var records: [String: TrustSettingsRecord] = [:]

    /// The format version Apple writes.
    package static let version = 1

    /// No settings.
    package init() {}

    /// Reads a property list; `errSecInvalidTrustSettings` when it is not trust settings.
    package init(propertyList data: Data) throws(KeychainError) {
        let invalid = KeychainError(
            code: .invalidParameter, status: .invalidTrustSettings,
            message: "The data is not trust settings (a property list with trustVersion and trustList, as security trust-settings-export writes).")
        guard let root = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any],
            let list = root["trustList"] as? [String: Any]
        else { throw invalid }
        for (hash, value) in list {
            guard let entry = value as? [String: Any], hash.count == 40, hash.allSatisfy(\.isHexDigit),
                let issuer = entry["issuerName"] as? Data, let serial = entry["serialNumber"] as? Data
            else { throw invalid }
            var constraints: [TrustSettingsConstraint] = []
            for item in (entry["trustSettings"] as? [Any]) ?? [] {
                guard let dictionary = item as? [String: Any] else { throw invalid }
                constraints.append(try Self.constraint(dictionary))
            }
            records[hash.uppercased()] = TrustSettingsRecord(
                issuerName: issuer, serialNumber: serial, modificationDate: (entry["modDate"] as? Date) ?? Date(timeIntervalSince1970: 0),
                constraints: constraints, certificate: entry["certificate"] as? Data)
        }
    }

    /// The XML property list. With `includingCertificates`, each record also carries its certificate's DER
    /// (the keychain's own file); without, exactly Apple's keys (an export).
    package func propertyList(includingCertificates: Bool) throws(KeychainError) -> Data {
        var list: [String: Any] = [:]
        for (hash, record) in records {
            var entry: [String: Any] = [
                "issuerName": record.issuerName, "serialNumber": record.serialNumber, "modDate": record.modificationDate,
                "trustSettings": record.constraints.map(Self.dictionary),
            ]
            if includingCertificates, let certificate = record.certificate { entry["certificate"] = certificate }
            list[hash] = entry
        }
        let root: [String: Any] = ["trustVersion": Self.version, "trustList": list]
        do {
            return try PropertyListSerialization.data(fromPropertyList: root, format: .xml, options: 0)
        } catch {
            throw KeychainError(code: .internal, message: "Cannot encode the trust settings as a property list.", cause: nil)
        }
    }

    /// A usage constraint from an API or file dictionary (Apple's keys); `errSecParam` for a key of the wrong type.
    package static func constraint(_ dictionary: [String: Any]) throws(KeychainError) -> TrustSettingsConstraint {
        func bad(_ key: String) -> KeychainError {
            KeychainError(code: .invalidParameter, message: "The trust setting's \(key) has the wrong type.")
        }
        var out = TrustSettingsConstraint()
        typealias Key = TrustSettingsConstraint.Key
        if let value = dictionary[Key.policy] {
            guard let bytes = value as? Data else { throw bad(Key.policy) }
            out.policy = bytes
        }
        if let value = dictionary[Key.policyName] {
            guard let name = value as? String else { throw bad(Key.policyName) }
            out.policyName = name
        }
        if let value = dictionary[Key.policyString] {
            guard let string = value as? String else { throw bad(Key.policyString) }
            out.policyString = string
        }
        if let value = dictionary[Key.keyUsage] {
            guard let number = integer(value) else { throw bad(Key.keyUsage) }
            out.keyUsage = number
        }
        if let value = dictionary[Key.allowedError] {
            guard let number = integer(value) else { throw bad(Key.allowedError) }
            out.allowedError = number
        }
        if let value = dictionary[Key.result] {
            guard let number = integer(value), let result = TrustSettingsResult(rawValue: Int(number)), result != .invalid else {
                throw KeychainError(code: .invalidParameter, status: .invalidTrustSetting, message: "kSecTrustSettingsResult must be trustRoot (1), trustAsRoot (2), deny (3) or unspecified (4).")
            }
            out.result = result
        }
        return out
    }

    /// The dictionary of a usage constraint, with Apple's keys.
    package static func dictionary(_ constraint: TrustSettingsConstraint) -> [String: Any] {
        typealias Key = TrustSettingsConstraint.Key
        var out: [String: Any] = [:]
        if let policy = constraint.policy { out[Key.policy] = policy }
        if let name = constraint.policyName { out[Key.policyName] = name }
        if let string = constraint.policyString { out[Key.policyString] = string }
        if let usage = constraint.keyUsage { out[Key.keyUsage] = Int(usage) }
        if let error = constraint.allowedError { out[Key.allowedError] = Int(error) }
        if let result = constraint.result { out[Key.result] = result.rawValue }
        return out
    }

    private static func integer(_ value: Any) -> Int64? {
        if let number = value as? Int { return Int64(number) }
        if let number = value as? Int64 { return number }
        if let number = value as? Int32 { return Int64(number) }
        if let number = value as? NSNumber { return number.int64Value }
        return nil
    }
}
