extension KeychainStatus {
    /// The specified trust setting is invalid (`errSecInvalidTrustSetting`).
    public static let invalidTrustSetting = KeychainStatus(-25242)
    /// The Trust Settings Record was corrupted (`errSecInvalidTrustSettings`).
    public static let invalidTrustSettings = KeychainStatus(-25262)
    /// No Trust Settings were found (`errSecNoTrustSettings`).
    public static let noTrustSettings = KeychainStatus(-25263)
    /// An incomplete certificate revocation check occurred (`errSecIncompleteCertRevocationCheck`).
    public static let incompleteRevocationCheck = KeychainStatus(-67635)
    /// The trust setting for this policy was set to Deny (`errSecTrustSettingDeny`).
    public static let trustSettingDeny = KeychainStatus(-67654)
    /// The certificate was revoked (`errSecCertificateRevoked`).
    public static let certificateRevoked = KeychainStatus(-67820)
}
