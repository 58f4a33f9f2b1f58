import Foundation
import KeychainServices

// `keychain-test-helper trust-settings VERB …`: Apple's SecTrustSettings… calls, one per run, printing what they
// returned, so a test can point the trust store at its own files with environment variables.
//
//   set CERT.der DOMAIN [result=N] [policy=ssl|basic] [string=HOST]   → "status=N" (no result/policy/string: nil settings)
//   copy CERT.der DOMAIN                                             → "status=N count=K results=R,… policies=ssl|basic|-,…"
//   remove CERT.der DOMAIN                                           → "status=N"
//   certs DOMAIN                                                     → "status=N count=K"
//   export DOMAIN FILE / import DOMAIN FILE                          → "status=N"
//   bad-import DOMAIN                                                → imports bytes that are not trust settings: "status=N"
func trustSettingsVerb(_ args: [String]) -> Int32 {
    func domain(_ name: String) -> SecTrustSettingsDomain? {
        switch name {
        case "user": .user
        case "admin": .admin
        case "system": .system
        default: nil
        }
    }
    func certificate(_ path: String) -> SecCertificate? {
        FileManager.default.contents(atPath: path).flatMap { SecCertificateCreateWithData(nil, $0 as CFData) }
    }
    func option(_ name: String) -> String? {
        args.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }
    switch (args.first, args.count) {
    case ("set", 3...):
        guard let cert = certificate(args[1]), let domain = domain(args[2]) else { return 2 }
        var settings: [String: Any] = [:]
        if let result = option("result").flatMap(UInt32.init) { settings[kSecTrustSettingsResult] = NSNumber(value: result) }
        switch option("policy") {
        case "ssl": settings[kSecTrustSettingsPolicy] = SecPolicyCreateSSL(true, nil)
        case "basic": settings[kSecTrustSettingsPolicy] = SecPolicyCreateBasicX509()
        default: break
        }
        if let string = option("string") { settings[kSecTrustSettingsPolicyString] = string }
        flushLine("status=\(SecTrustSettingsSetTrustSettings(cert, domain, settings.isEmpty ? nil : NSDictionary(dictionary: settings)))")
    case ("copy", 3):
        guard let cert = certificate(args[1]), let domain = domain(args[2]) else { return 2 }
        var array: CFArray?
        let status = SecTrustSettingsCopyTrustSettings(cert, domain, &array)
        let list = (array as? [[String: Any]]) ?? []
        let results = list.map { ($0[kSecTrustSettingsResult] as? NSNumber).map { "\($0.intValue)" } ?? "-" }
        let policies = list.map { entry -> String in
            guard entry[kSecTrustSettingsPolicy] is SecPolicy else { return "-" }
            return (entry[kSecTrustSettingsPolicyName] as? String) ?? "?"
        }
        flushLine("status=\(status) count=\(list.count) results=\(results.joined(separator: ",")) policies=\(policies.joined(separator: ","))")
    case ("remove", 3):
        guard let cert = certificate(args[1]), let domain = domain(args[2]) else { return 2 }
        flushLine("status=\(SecTrustSettingsRemoveTrustSettings(cert, domain))")
    case ("certs", 2):
        guard let domain = domain(args[1]) else { return 2 }
        var array: CFArray?
        let status = SecTrustSettingsCopyCertificates(domain, &array)
        flushLine("status=\(status) count=\((array as? [SecCertificate])?.count ?? 0)")
    case ("export", 3):
        guard let domain = domain(args[1]) else { return 2 }
        var data: CFData?
        let status = SecTrustSettingsCreateExternalRepresentation(domain, &data)
        if let data { _ = FileManager.default.createFile(atPath: args[2], contents: data as Data) }
        flushLine("status=\(status)")
    case ("import", 3):
        guard let domain = domain(args[1]), let data = FileManager.default.contents(atPath: args[2]) else { return 2 }
        flushLine("status=\(SecTrustSettingsImportExternalRepresentation(domain, data as CFData))")
    case ("bad-import", 2):
        guard let domain = domain(args[1]) else { return 2 }
        flushLine("status=\(SecTrustSettingsImportExternalRepresentation(domain, Data("not a plist".utf8) as CFData))")
    default:
        return 2
    }
    return 0
}
