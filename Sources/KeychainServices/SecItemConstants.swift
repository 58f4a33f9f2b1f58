#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation

// Keychain Services constants with Apple's exact string values (Apple's SecItem.h / SecItemConstants.c).
// The constants are immutable NSString objects created once; Foundation does not mark NSString Sendable,
// hence `nonisolated(unsafe)` (nothing ever mutates them).

// MARK: Item class key and values
/// The dictionary key whose value is the item's class.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// The value that indicates a generic password item.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// The value that indicates an Internet password item.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// The value that indicates a certificate item.
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// The value that indicates a cryptographic key item.
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// The value that indicates an identity item.
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"

// MARK: Item attribute keys
/// When the item's data can be accessed (a `kSecAttrAccessible…` value).
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// The item's access control object.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// The access group the item is in.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// Whether the item is synchronized to the user's other devices.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// The item's creation date (read-only).
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// The item's last modification date (read-only).
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// A user-visible string describing this kind of item.
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// A user-editable comment.
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// The item's creator, a four-character code as a number.
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// The item's type, a four-character code as a number.
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// A user-visible label.
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// Whether the item is invisible (not displayed).
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// Whether there is a valid password associated with the item.
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// The account name.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// The service associated with a generic password.
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// User-defined data of a generic password.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
/// The synchronization view hint.
nonisolated(unsafe) public let kSecAttrSyncViewHint: CFString = "vwht"
/// The Internet security domain.
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// The server's domain name or IP address.
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// The protocol (a `kSecAttrProtocol…` value).
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// The authentication scheme (a `kSecAttrAuthenticationType…` value).
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// The Internet port number.
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// A path, usually the path component of a URL.
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"
/// The X.500 subject name of a certificate (read-only).
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// The X.500 issuer name of a certificate (read-only).
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// The serial number of a certificate (read-only).
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// The subject key ID of a certificate (read-only).
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// The hash of a certificate's public key (read-only).
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// The certificate type (read-only).
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// The certificate encoding (read-only).
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"
/// The key's class (a `kSecAttrKeyClass…` value).
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// A label for a key, by default the hash of its public key.
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// Whether a key is stored permanently in the keychain.
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// Whether a key is sensitive.
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// Whether a key can be extracted.
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// Private tag data of a key.
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// The key's algorithm (a `kSecAttrKeyType…` value).
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// The pseudorandom function of a password-derived key.
nonisolated(unsafe) public let kSecAttrPRF: CFString = "prf"
/// The salt of a password-derived key.
nonisolated(unsafe) public let kSecAttrSalt: CFString = "salt"
/// The iteration count of a password-derived key.
nonisolated(unsafe) public let kSecAttrRounds: CFString = "rounds"
/// The number of bits in a key.
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// The effective number of bits in a key.
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// Whether a key can encrypt data.
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// Whether a key can decrypt data.
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// Whether a key can derive other keys.
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// Whether a key can create signatures.
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// Whether a key can verify signatures.
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// Whether a key can wrap another key.
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// Whether a key can unwrap another key.
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"
/// The token that holds a key.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
/// The alias of a certificate or key.
nonisolated(unsafe) public let kSecAttrAlias: CFString = "alis"
/// The persistent reference of an item.
nonisolated(unsafe) public let kSecAttrPersistentReference: CFString = "persistref"
/// The persistent reference of an item (Apple's original spelling).
nonisolated(unsafe) public let kSecAttrPersistantReference: CFString = "persistref"

// MARK: Synchronizable and access-group values
/// Matches both synchronizable and non-synchronizable items in a query.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// The read-only access group of items provided by tokens.
nonisolated(unsafe) public let kSecAttrAccessGroupToken: CFString = "com.apple.token"
/// The token ID of keys that never leave the secure store.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"

// MARK: Accessibility values
/// The data can be accessed only while the keychain is unlocked (the default).
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// The data can be accessed after the first unlock until the next restart.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// The data can always be accessed, regardless of the lock state (deprecated).
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// Only when unlocked, only if a passcode is set; never leaves this machine.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// Only while unlocked; never leaves this machine.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// After the first unlock; never leaves this machine.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// Always; never leaves this machine (deprecated).
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"

// MARK: Protocol values
/// FTP.
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// A client-side FTP account.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// HTTP.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// IRC.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// NNTP.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// POP3.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// SMTP.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// SOCKS.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// IMAP.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// LDAP.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// AppleTalk.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// AFP over TCP.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// Telnet.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// SSH.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// FTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// HTTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// HTTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// HTTPS proxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// FTP proxy.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// SMB.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// RTSP.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// RTSP proxy.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// DAAP.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// Remote Apple Events.
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// IPP.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// NNTP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// LDAP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// Telnet over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// IMAP over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// IRC over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// POP3 over TLS/SSL.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: Authentication type values
/// Windows NT LAN Manager authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// Microsoft Network default authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// Distributed Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// Remote Password authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// HTTP Basic authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// HTTP Digest Access authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// HTML form based authentication.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// The default authentication type.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: Key class and key type values
/// A public key of a public-private pair.
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// A private key of a public-private pair.
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// A private key used for symmetric-key encryption.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// RSA algorithm.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// Elliptic curve algorithm.
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// Elliptic curve algorithm (older name).
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"

// MARK: Search keys and values
/// Match certificates or identities valid under a SecPolicy.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// Limit the search to a list of items.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// Limit the search to a list of keychains.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// Match certificates or identities issued by these issuers.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// Match certificates with this email address.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// Match certificates whose subject contains this string.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Match certificates whose subject starts with this string.
nonisolated(unsafe) public let kSecMatchSubjectStartsWith: CFString = "m_SubjectStartsWith"
/// Match certificates whose subject ends with this string.
nonisolated(unsafe) public let kSecMatchSubjectEndsWith: CFString = "m_SubjectEndsWith"
/// Match certificates whose subject is this string.
nonisolated(unsafe) public let kSecMatchSubjectWholeString: CFString = "m_SubjectWholeString"
/// Accepted and ignored: matching on this keychain is byte-exact, as on Apple's data-protection keychain.
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// Accepted and ignored.
nonisolated(unsafe) public let kSecMatchDiacriticInsensitive: CFString = "m_DiacriticInsensitive"
/// Accepted and ignored.
nonisolated(unsafe) public let kSecMatchWidthInsensitive: CFString = "m_WidthInsensitive"
/// Match only trusted certificates.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// Match certificates valid on this date.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"
/// How many results to return: `kSecMatchLimitOne` (the default), `kSecMatchLimitAll` or a number.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// Return one result.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Return every result.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// Match internet passwords for this host or its subdomains.
nonisolated(unsafe) public let kSecMatchHostOrSubdomainOfHost: CFString = "m_HostOrSubdomainOfHost"

// MARK: Return type keys
/// Return the item's data (`CFData`).
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Return the item's attributes (`CFDictionary`).
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference to the item.
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference to the item (`CFData`).
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Value type keys
/// The item's data (`CFData`).
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// A reference to the item (SecKey, SecCertificate or SecIdentity).
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference to the item (`CFData`).
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"

// MARK: Other keys
/// Use the data-protection keychain (always the case here; accepted and ignored).
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// A list of items to use instead of the keychain.
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
/// The keychain to use.
nonisolated(unsafe) public let kSecUseKeychain: CFString = "u_Keychain"
/// The reason shown when the user is asked to authenticate (Apple deprecated it in iOS 14 and macOS 11 in favour
/// of `LAContext.localizedReason`; both work here).
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// `true`: fail with `errSecInteractionNotAllowed` rather than ask the user to authenticate (deprecated by Apple
/// in favour of `kSecUseAuthenticationUI`; not marked so here, so that ported code builds without warnings).
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// Whether the user may be asked to authenticate when an item's access control needs it: one of
/// `kSecUseAuthenticationUIAllow` (the default), `kSecUseAuthenticationUIFail` and `kSecUseAuthenticationUISkip`.
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// Allow asking the user to authenticate (through pinentry, by whoever holds the keys).
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// Fail with `errSecInteractionNotAllowed` rather than ask (Apple deprecated it in iOS 14 and macOS 11 in favour
/// of `LAContext.interactionNotAllowed`; both work here).
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// Leave out of the results the items whose access control would need the user to authenticate.
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// An `LAContext` (`import LocalAuthentication`) whose proofs of the user's presence the call may use and keep.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"

// MARK: swift-keychain extensions (not Apple's)
/// **A swift-keychain extension, not in Apple's API**: the programs that may find and read the item besides those of
/// its access group (macOS's trusted applications, `security add-generic-password -T`). A `CFArray` of `CFString`s,
/// each an absolute executable path with symlinks resolved, `"flatpak:APPID"`, `"snap:NAME"`, `"teamid:TEAM"`
/// (programs with an access group `TEAM.…`), or ``kSecTrustedApplicationAny`` (any program of the user, `-A`);
/// an empty array removes the list. Set it in `SecItemAdd`'s attributes or, by a program of the item's access
/// group, in `SecItemUpdate`'s; `kSecReturnAttributes` returns it. A trusted program may read the item, not change
/// or delete it; the item stays in its access group, whose `kSecAttrAccessGroup` is unchanged.
nonisolated(unsafe) public let kSecAttrTrustedApplications: CFString = "xtap"
/// **A swift-keychain extension**: the entry of ``kSecAttrTrustedApplications`` that trusts any program of the user
/// (macOS's `security add-generic-password -A`).
nonisolated(unsafe) public let kSecTrustedApplicationAny: CFString = "*"
#endif
