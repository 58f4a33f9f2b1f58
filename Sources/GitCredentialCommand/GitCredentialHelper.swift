// git-credential-keychain: git's credential helper backed by the keychain, the Linux counterpart of
// git's `git-credential-osxkeychain`.
//
//   git-credential-keychain get|store|erase   < key=value lines
//   git-credential-keychain --help | --version   (for a person; see Usage.swift)
//
// Credentials are internet-password items (kSecClassInternetPassword): protocol → kSecAttrProtocol,
// host → kSecAttrServer (its :port → kSecAttrPort), path → kSecAttrPath (only when git sends one),
// username → kSecAttrAccount, password (+ expiry and OAuth refresh token) → kSecValueData.
// Any other operation, and any malformed input, is ignored with exit status 0, as git's helpers do; a field
// the helper uses whose value is not UTF-8 text is refused with a message on stderr and exit status 1, never
// stored or matched under a repaired name another credential could share.
import Foundation
import KeychainServices

#if canImport(Glibc)
import Glibc
#endif

/// Reads standard input up to its end or up to the first blank line, whichever comes first, so a caller
/// that keeps the pipe open after the credential does not hang the helper.
func readCredentialInput() -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        data.append(contentsOf: buffer[0..<count])
        if data.first == UInt8(ascii: "\n") || data.range(of: Data("\n\n".utf8)) != nil
            || data.range(of: Data("\n\r\n".utf8)) != nil
        {
            break
        }
    }
    return data
}

/// Writes `text` to standard output at once (no buffering left behind at exit).
func emit(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// Reports a keychain failure on standard error and exits with status 1 (git ignores a failing `store`
/// or `erase` and treats a failing `get` as no answer).
func fail(_ what: String, _ status: OSStatus) -> Never {
    let message = (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
    FileHandle.standardError.write(Data("git-credential-keychain: \(what): \(message) (\(status))\n".utf8))
    exit(1)
}

/// The query naming every item that matches `request`: protocol, server and port always (port 0 when git
/// sent none, so `example.com` and `example.com:8443` are different credentials, as in git itself), path
/// and account only when git sent them (a missing field matches any value, as git's own matching does).
/// - Returns: `nil` when the request lacks a protocol or host, or names a protocol without a keychain
///   constant.
func baseQuery(_ request: CredentialRequest) -> [String: Any]? {
    guard let scheme = request.scheme, let keychainProtocol = CredentialRequest.keychainProtocol(for: scheme),
        let host = request.host, !host.isEmpty
    else { return nil }
    var query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrProtocol as String: keychainProtocol,
        kSecAttrServer as String: host,
        kSecAttrPort as String: request.port ?? 0,
    ]
    if let path = request.path, !path.isEmpty { query[kSecAttrPath as String] = path }
    if let username = request.username { query[kSecAttrAccount as String] = username }
    return query
}

/// One matching item as read back from the keychain.
struct FoundItem {
    /// The item's account (git's username).
    var account: String
    /// The decoded secret.
    var secret: StoredSecret
    /// When the item was last stored or updated (its creation date if it has no modification date).
    var modified: Date
    /// The item's persistent reference, to delete exactly this item.
    var persistentRef: Data?
}

/// Every item matching `query`, newest first; items whose data is not UTF-8 are skipped.
func findItems(_ query: [String: Any]) -> [FoundItem] {
    var search = query
    search[kSecMatchLimit as String] = kSecMatchLimitAll
    search[kSecReturnAttributes as String] = true
    search[kSecReturnData as String] = true
    search[kSecReturnPersistentRef as String] = true
    var result: CFTypeRef?
    let status = SecItemCopyMatching(search as CFDictionary, &result)
    if status == errSecItemNotFound { return [] }
    guard status == errSecSuccess else { fail("cannot read the keychain", status) }
    let rows: [[String: Any]]
    if let array = result as? [[String: Any]] {
        rows = array
    } else if let single = result as? [String: Any] {
        rows = [single]
    } else {
        rows = []
    }
    let items = rows.compactMap { row -> FoundItem? in
        guard let data = row[kSecValueData as String] as? Data, let secret = StoredSecret(decoding: data) else {
            return nil
        }
        let modified =
            (row[kSecAttrModificationDate as String] as? Date)
            ?? (row[kSecAttrCreationDate as String] as? Date) ?? .distantPast
        return FoundItem(
            account: row[kSecAttrAccount as String] as? String ?? "", secret: secret,
            modified: modified, persistentRef: row[kSecValuePersistentRef as String] as? Data)
    }
    // A stable sort keeps the keychain's own order (oldest first) among equal dates; reversed, newest first.
    return items.enumerated().sorted { lhs, rhs in
        lhs.element.modified != rhs.element.modified
            ? lhs.element.modified > rhs.element.modified
            : lhs.offset > rhs.offset
    }.map(\.element)
}

/// `get`: prints the newest unexpired matching credential, or nothing.
///
/// Without a `username` in the request, the most recently stored (or updated) of the host's credentials
/// is returned. A credential whose `password_expiry_utc` is past is never returned.
func getCredential(_ request: CredentialRequest) {
    guard let query = baseQuery(request) else { return }
    guard let item = findItems(query).first(where: { !CredentialRequest.isExpired($0.secret.passwordExpiryUTC) })
    else { return }
    var output = "username=\(item.account)\npassword=\(item.secret.password)\n"
    if let expiry = item.secret.passwordExpiryUTC { output += "password_expiry_utc=\(expiry)\n" }
    if let token = item.secret.oauthRefreshToken { output += "oauth_refresh_token=\(token)\n" }
    emit(output)
}

/// `store`: adds the credential, or replaces the secret of the item with the same protocol, host, port,
/// path and username. Only complete credentials (protocol, host, username, password) are stored, as in
/// git's osxkeychain helper, and never one that has already expired.
func storeCredential(_ request: CredentialRequest) {
    guard var query = baseQuery(request), request.username != nil, let password = request.password,
        !request.isExpired()
    else { return }
    if request.path?.isEmpty ?? true { query[kSecAttrPath as String] = "" }
    let secret = StoredSecret(
        password: password, passwordExpiryUTC: request.passwordExpiryUTC,
        oauthRefreshToken: request.oauthRefreshToken
    ).encoded
    var attributes = query
    attributes[kSecValueData as String] = secret
    attributes[kSecAttrLabel as String] = request.host
    let status = SecItemAdd(attributes as CFDictionary, nil)
    if status == errSecDuplicateItem {
        let update = SecItemUpdate(query as CFDictionary, [kSecValueData as String: secret] as CFDictionary)
        if update != errSecSuccess { fail("cannot update the credential", update) }
    } else if status != errSecSuccess {
        fail("cannot store the credential", status)
    }
}

/// `erase`: deletes every item matching the request's protocol, host, port and (when given) path and
/// username. When git also sends a password, only items holding that password are deleted, so a
/// credential replaced meanwhile by another process survives (as newer git's helpers do).
func eraseCredential(_ request: CredentialRequest) {
    guard let query = baseQuery(request) else { return }
    guard let password = request.password else {
        let status = SecItemDelete(query as CFDictionary)
        if status != errSecSuccess && status != errSecItemNotFound { fail("cannot erase the credential", status) }
        return
    }
    for item in findItems(query) where item.secret.password == password {
        guard let ref = item.persistentRef else { continue }
        let status = SecItemDelete([kSecValuePersistentRef as String: ref] as CFDictionary)
        if status != errSecSuccess && status != errSecItemNotFound { fail("cannot erase the credential", status) }
    }
}

/// git's credential helper: what `git-credential-keychain` (and the multi-call `keychain` binary run by that name)
/// does with its command line.
package enum GitCredentialHelper {
    /// Answers the operation git asks for, then exits.
    /// - Parameter arguments: The command line, program name first: argv[1] is the operation (`get`, `store`,
    ///   `erase`; `--help` and `--version` for a person).
    package static func main(arguments: [String]) -> Never {
        // A person asking for help or the version (git never does); any other operation git does not define is ignored.
        if arguments.count >= 2, let answer = HelperUsage.answer(to: arguments[1]) {
            emit(answer)
            exit(0)
        }
        if arguments.count >= 2, ["get", "store", "erase"].contains(arguments[1]) {
            let input = readCredentialInput()
            if let request = CredentialRequest.parse(input) {
                switch arguments[1] {
                case "get": getCredential(request)
                case "store": storeCredential(request)
                default: eraseCredential(request)
                }
            } else if let key = CredentialRequest.nonTextKey(in: input) {
                // Never matched or stored under a repaired name another credential could share (errSecParam).
                FileHandle.standardError.write(
                    Data("git-credential-keychain: cannot \(arguments[1]) the credential: its \(key) is not UTF-8 text, and the keychain keeps git's fields as text (\(errSecParam))\n".utf8))
                exit(1)
            }
        }
        exit(0)
    }
}
