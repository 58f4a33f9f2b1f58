import Foundation
import KeychainServices

/// One credential as git describes it on a helper's standard input: `key=value` lines, ending at end of
/// input or at a blank line.
///
/// Only the keys this helper acts on are kept (`protocol`, `host`, `path`, `username`, `password`,
/// `password_expiry_utc`, `oauth_refresh_token`); any other key (`capability[]`, `state[]`, `wwwauth[]`, …)
/// is ignored, as git's own helpers ignore it. A missing field is `nil`; a field git sent empty
/// (`username=`) is the empty string, which is a value of its own (git's test library stores an empty
/// username).
struct CredentialRequest: Equatable {
    /// The `protocol` line (`https`, `http`, `ftp`, …), as git sent it.
    var scheme: String?
    /// The `host` line without its `:port`.
    var host: String?
    /// The port split off `host` (`example.com:8443` → 8443), or `nil` when `host` had none.
    var port: Int?
    /// The `path` line; git sends it only when `credential.useHttpPath` is set (or for `cert` credentials).
    var path: String?
    /// The `username` line.
    var username: String?
    /// The `password` line.
    var password: String?
    /// The `password_expiry_utc` line: Unix seconds after which the password must no longer be used.
    var passwordExpiryUTC: String?
    /// The `oauth_refresh_token` line, a secret stored beside the password.
    var oauthRefreshToken: String?

    /// Parses a helper's standard input.
    ///
    /// - Returns: The request, or `nil` when the input is not a well-formed credential: bytes that are not
    ///   UTF-8, a NUL byte, a non-blank line without `=`, or a `host` whose port is not a number from 1 to
    ///   65535. The helper then does nothing: ignoring a single bad line instead could widen an `erase` to
    ///   credentials the caller never named.
    static func parse(_ input: Data) -> CredentialRequest? {
        var request = CredentialRequest()
        var lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)[...]
        while let raw = lines.popFirst() {
            var bytes = raw[...]
            if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
            if bytes.isEmpty {
                // A blank line ends the credential; the empty piece after a final newline is end of input.
                break
            }
            guard !bytes.contains(0), let line = String(bytes: bytes, encoding: .utf8),
                let equals = line.firstIndex(of: "=")
            else { return nil }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            switch key {
            case "protocol": request.scheme = value
            case "host":
                guard let (host, port) = splitHost(value) else { return nil }
                request.host = host
                request.port = port
            case "path": request.path = value
            case "username": request.username = value
            case "password": request.password = value
            case "password_expiry_utc": request.passwordExpiryUTC = value
            case "oauth_refresh_token": request.oauthRefreshToken = value
            default: continue
            }
        }
        return request
    }

    /// The keys whose values this helper stores or matches on.
    static let usedKeys: Set<String> = ["protocol", "host", "path", "username", "password", "password_expiry_utc", "oauth_refresh_token"]

    /// The first key this helper acts on whose value is not UTF-8 text, in input ``parse(_:)`` refused.
    ///
    /// git's protocol is bytes, but this helper keeps its fields as text: such a credential is refused (with a
    /// message) rather than stored or matched under a repaired name that another credential could share.
    /// - Returns: `nil` when every such value is UTF-8 (the input was refused for another reason, or not at all).
    static func nonTextKey(in input: Data) -> String? {
        for raw in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var bytes = raw[...]
            if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
            if bytes.isEmpty { break }
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")),
                let key = String(validating: bytes[..<equals], as: UTF8.self), usedKeys.contains(key)
            else { continue }
            if String(validating: bytes[bytes.index(after: equals)...], as: UTF8.self) == nil { return key }
        }
        return nil
    }

    /// Splits `host[:port]` into the server name and the port.
    ///
    /// The port is what follows the last colon, unless that colon is inside an IPv6 literal in brackets
    /// (`[::1]:8080` → `[::1]`, 8080; `[::1]` → `[::1]`, `nil`).
    /// - Returns: `nil` when there is a port part that is not a number from 1 to 65535.
    static func splitHost(_ value: String) -> (host: String, port: Int?)? {
        guard let colon = value.lastIndex(of: ":") else { return (value, nil) }
        if let bracket = value.lastIndex(of: "]"), bracket > colon { return (value, nil) }
        let digits = value[value.index(after: colon)...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count <= 5,
            let port = Int(digits), (1...65535).contains(port)
        else { return nil }
        return (String(value[..<colon]), port)
    }

    /// Whether `password_expiry_utc` names a moment already past (a value that is not a whole number of
    /// seconds counts as no expiry, as git's own parser treats it).
    func isExpired(now: Date = Date()) -> Bool {
        CredentialRequest.isExpired(passwordExpiryUTC, now: now)
    }

    /// Whether the `password_expiry_utc` value `expiry` is in the past at `now`.
    static func isExpired(_ expiry: String?, now: Date = Date()) -> Bool {
        guard let expiry, let seconds = Int64(expiry), seconds > 0 else { return false }
        return Double(seconds) < now.timeIntervalSince1970
    }

    /// The Keychain protocol constant for a git `protocol` value, as Apple's `kSecAttrProtocol…` values,
    /// or `nil` for a protocol the keychain has no constant for (git's osxkeychain helper then does
    /// nothing, and so does this one).
    static func keychainProtocol(for scheme: String) -> CFString? {
        switch scheme {
        case "https": kSecAttrProtocolHTTPS
        case "http": kSecAttrProtocolHTTP
        case "ftp": kSecAttrProtocolFTP
        case "ftps": kSecAttrProtocolFTPS
        case "imap": kSecAttrProtocolIMAP
        case "imaps": kSecAttrProtocolIMAPS
        case "smtp": kSecAttrProtocolSMTP
        case "pop3": kSecAttrProtocolPOP3
        case "pop3s": kSecAttrProtocolPOP3S
        case "ldap": kSecAttrProtocolLDAP
        case "ldaps": kSecAttrProtocolLDAPS
        case "ssh": kSecAttrProtocolSSH
        case "telnet": kSecAttrProtocolTelnet
        case "telnets": kSecAttrProtocolTelnetS
        case "nntp": kSecAttrProtocolNNTP
        case "nntps": kSecAttrProtocolNNTPS
        case "irc": kSecAttrProtocolIRC
        case "ircs": kSecAttrProtocolIRCS
        case "smb": kSecAttrProtocolSMB
        case "afp": kSecAttrProtocolAFP
        case "rtsp": kSecAttrProtocolRTSP
        case "ipp": kSecAttrProtocolIPP
        default: nil
        }
    }
}

/// The secret kept as an item's `kSecValueData`: the password and, when git supplied them, the password's
/// expiry and the OAuth refresh token.
///
/// Encoding (UTF-8), the one git's newer `git-credential-osxkeychain` uses, so the two helpers read each
/// other's items:
///
/// ```
/// <password>[\npassword_expiry_utc=<unix seconds>][\noauth_refresh_token=<token>]
/// ```
///
/// A credential with neither extra is stored as the bare password, so other programs reading the item
/// (`security find-internet-password -w`) see just the password. No field can contain a newline: git's
/// protocol has none in values. The refresh token is a secret and therefore lives only here, encrypted
/// with the password, never in a plain attribute.
struct StoredSecret: Equatable {
    /// The password (first line).
    var password: String
    /// The `password_expiry_utc` value, if stored.
    var passwordExpiryUTC: String?
    /// The `oauth_refresh_token` value, if stored.
    var oauthRefreshToken: String?

    /// The bytes to store as `kSecValueData`.
    var encoded: Data {
        var text = password
        if let passwordExpiryUTC { text += "\npassword_expiry_utc=" + passwordExpiryUTC }
        if let oauthRefreshToken { text += "\noauth_refresh_token=" + oauthRefreshToken }
        return Data(text.utf8)
    }

    /// Reads a stored secret.
    /// - Returns: `nil` when `data` is not UTF-8 (an item some other program stored, which git cannot use).
    ///   Lines after the first that are not one of the two known keys are ignored.
    init?(decoding data: Data) {
        guard let text = String(data: data, encoding: .utf8) else { return nil }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        password = String(lines.popFirst() ?? "")
        for line in lines {
            if line.hasPrefix("password_expiry_utc=") {
                passwordExpiryUTC = String(line.dropFirst("password_expiry_utc=".count))
            } else if line.hasPrefix("oauth_refresh_token=") {
                oauthRefreshToken = String(line.dropFirst("oauth_refresh_token=".count))
            }
        }
    }

    /// A secret made of its parts.
    init(password: String, passwordExpiryUTC: String? = nil, oauthRefreshToken: String? = nil) {
        self.password = password
        self.passwordExpiryUTC = passwordExpiryUTC
        self.oauthRefreshToken = oauthRefreshToken
    }
}
