/// How a Secret Service session protects secrets on the bus: the `algorithm` argument of
/// `org.freedesktop.Secret.Service.OpenSession` (Secret Service API 0.2, "Transfer of Secrets").
///
/// The raw value is the algorithm's name as clients send it; names are compared exactly, as gnome-keyring does.
package enum SecretTransferAlgorithm: String, Sendable, CaseIterable {
    /// Secrets travel as they are: no key exchange (`OpenSession`'s input and output are empty), empty parameters.
    /// Only as safe as the bus itself, which on a session bus is the user's own processes.
    case plain
    /// A Diffie-Hellman exchange in RFC 2409's second Oakley group (1024-bit MODP, g = 2), whose shared secret,
    /// padded to 128 bytes, gives an AES-128 key by HKDF-SHA256 (empty salt and info); each secret is then
    /// AES-128-CBC with PKCS#7 padding under a fresh 16-byte IV, carried as the secret's parameters.
    case dhIETF1024SHA256AES128CBCPKCS7 = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
}
