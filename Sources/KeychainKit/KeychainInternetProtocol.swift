/// The protocol of an internet password (`kSecAttrProtocol…`).
///
/// The raw value is Apple's four-character code, stored in the item's `ptcl` attribute; some codes end in a
/// space (`"ftp "`, `"ssh "`).
public enum KeychainInternetProtocol: String, Sendable, Hashable, CaseIterable {
    /// FTP (`kSecAttrProtocolFTP`).
    case ftp = "ftp "
    /// An FTP account (`kSecAttrProtocolFTPAccount`).
    case ftpAccount = "ftpa"
    /// HTTP (`kSecAttrProtocolHTTP`).
    case http = "http"
    /// IRC (`kSecAttrProtocolIRC`).
    case irc = "irc "
    /// NNTP (`kSecAttrProtocolNNTP`).
    case nntp = "nntp"
    /// POP3 (`kSecAttrProtocolPOP3`).
    case pop3 = "pop3"
    /// SMTP (`kSecAttrProtocolSMTP`).
    case smtp = "smtp"
    /// SOCKS (`kSecAttrProtocolSOCKS`).
    case socks = "sox "
    /// IMAP (`kSecAttrProtocolIMAP`).
    case imap = "imap"
    /// LDAP (`kSecAttrProtocolLDAP`).
    case ldap = "ldap"
    /// AppleTalk (`kSecAttrProtocolAppleTalk`).
    case appleTalk = "atlk"
    /// AFP (`kSecAttrProtocolAFP`).
    case afp = "afp "
    /// Telnet (`kSecAttrProtocolTelnet`).
    case telnet = "teln"
    /// SSH (`kSecAttrProtocolSSH`).
    case ssh = "ssh "
    /// FTP over TLS (`kSecAttrProtocolFTPS`).
    case ftps = "ftps"
    /// HTTPS (`kSecAttrProtocolHTTPS`).
    case https = "htps"
    /// An HTTP proxy (`kSecAttrProtocolHTTPProxy`).
    case httpProxy = "htpx"
    /// An HTTPS proxy (`kSecAttrProtocolHTTPSProxy`).
    case httpsProxy = "htsx"
    /// An FTP proxy (`kSecAttrProtocolFTPProxy`).
    case ftpProxy = "ftpx"
    /// CIFS (`kSecAttrProtocolCIFS`).
    case cifs = "cifs"
    /// SMB (`kSecAttrProtocolSMB`).
    case smb = "smb "
    /// RTSP (`kSecAttrProtocolRTSP`).
    case rtsp = "rtsp"
    /// An RTSP proxy (`kSecAttrProtocolRTSPProxy`).
    case rtspProxy = "rtsx"
    /// DAAP (`kSecAttrProtocolDAAP`).
    case daap = "daap"
    /// Remote Apple Events (`kSecAttrProtocolEPPC`).
    case eppc = "eppc"
    /// IPP (`kSecAttrProtocolIPP`).
    case ipp = "ipp "
    /// NNTP over TLS (`kSecAttrProtocolNNTPS`).
    case nntps = "ntps"
    /// LDAP over TLS (`kSecAttrProtocolLDAPS`).
    case ldaps = "ldps"
    /// Telnet over TLS (`kSecAttrProtocolTelnetS`).
    case telnets = "tels"
    /// IMAP over TLS (`kSecAttrProtocolIMAPS`).
    case imaps = "imps"
    /// IRC over TLS (`kSecAttrProtocolIRCS`).
    case ircs = "ircs"
    /// POP3 over TLS (`kSecAttrProtocolPOP3S`).
    case pop3s = "pops"

    /// The protocol a URL scheme names (case-insensitive), such as `https` → ``https`` or `sftp` → ``ssh``;
    /// `nil` for a scheme with no Apple protocol code.
    public init?(scheme: String) {
        switch scheme.lowercased() {
        case "ftp": self = .ftp
        case "http": self = .http
        case "https": self = .https
        case "irc": self = .irc
        case "ircs": self = .ircs
        case "nntp", "news": self = .nntp
        case "nntps": self = .nntps
        case "pop", "pop3": self = .pop3
        case "pops", "pop3s": self = .pop3s
        case "smtp": self = .smtp
        case "socks", "socks4", "socks5": self = .socks
        case "imap": self = .imap
        case "imaps": self = .imaps
        case "ldap": self = .ldap
        case "ldaps": self = .ldaps
        case "afp": self = .afp
        case "telnet": self = .telnet
        case "telnets": self = .telnets
        case "ssh", "sftp": self = .ssh
        case "ftps": self = .ftps
        case "cifs": self = .cifs
        case "smb": self = .smb
        case "rtsp": self = .rtsp
        case "daap": self = .daap
        case "eppc": self = .eppc
        case "ipp": self = .ipp
        default: return nil
        }
    }
}

/// How an internet password authenticates (`kSecAttrAuthenticationType…`).
///
/// The raw value is Apple's four-character code, stored in the item's `atyp` attribute.
public enum KeychainAuthenticationType: String, Sendable, Hashable, CaseIterable {
    /// Windows NT LAN Manager (`kSecAttrAuthenticationTypeNTLM`).
    case ntlm = "ntlm"
    /// Microsoft Network default (`kSecAttrAuthenticationTypeMSN`).
    case msn = "msna"
    /// Distributed Password Authentication (`kSecAttrAuthenticationTypeDPA`).
    case dpa = "dpaa"
    /// Remote Password Authentication (`kSecAttrAuthenticationTypeRPA`).
    case rpa = "rpaa"
    /// HTTP Basic (`kSecAttrAuthenticationTypeHTTPBasic`).
    case httpBasic = "http"
    /// HTTP Digest (`kSecAttrAuthenticationTypeHTTPDigest`).
    case httpDigest = "httd"
    /// An HTML form (`kSecAttrAuthenticationTypeHTMLForm`).
    case htmlForm = "form"
    /// The protocol's default (`kSecAttrAuthenticationTypeDefault`).
    case `default` = "dflt"
}
