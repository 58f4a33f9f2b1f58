import KeychainCore

/// What Apple's keychain does when an access control's biometry cannot be used: the facts the keychain's policy
/// follows (the policy itself lives with the engine's access checks).
///
/// ## `.biometryAny` and `.biometryCurrentSet` alone
/// Apple documents both as "Touch ID must be available and enrolled with at least one finger"
/// (`SecAccessControlCreateFlags.biometryAny`, `.biometryCurrentSet`). There is no fallback: on a Mac without
/// Touch ID, or with no finger enrolled, LocalAuthentication fails with `LAError.biometryNotAvailable` (-6) or
/// `.biometryNotEnrolled` (-7), and Security turns every LocalAuthentication error into an `OSStatus` thus
/// (`osstatus_for_localauthentication_error` in Security's `OSX/sec/Security/SecItem.c`):
///
/// | LocalAuthentication error | `OSStatus` |
/// |---|---|
/// | `userCancel` (-2) | `errSecUserCanceled` (-128) |
/// | `notInteractive` (-1004) | `errSecInteractionNotAllowed` (-25308) |
/// | a parameter error | `errSecParam` (-50) |
/// | anything else: `biometryNotAvailable`, `biometryNotEnrolled`, `biometryLockout`, `authenticationFailed`, `systemCancel`, `appCancel` | `errSecAuthFailed` (-25293) |
///
/// So reading such an item where biometry is unavailable fails with ``unavailableStatus`` (`errSecAuthFailed`),
/// not `errSecUserCanceled`; developers report the same -25293 when creating keys with these flags in a
/// simulator without biometry. The mapping is from Apple's published Security source as mirrored by Darling
/// (older than current macOS); later releases may differ in detail.
///
/// ## `.userPresence`
/// Apple: "Biometry doesn't have to be available or enrolled", equivalent to `.biometryAny` `.or`
/// `.devicePasscode`: without a reader the passcode (on a Mac, the login password) is asked instead.
///
/// ## `.biometryCurrentSet` after a change
/// Apple: "The item is invalidated if fingers are added or removed". The item stays in the keychain (it can be
/// deleted, and found without its secret), but its secret can no longer be read with any finger: compare
/// ``FprintdVerifier/enrolledSetDigest()`` with the digest stored with the item and refuse when they differ, even
/// when the finger matches. Apple does not document the status for this case; it comes from the same
/// LocalAuthentication mapping (`errSecAuthFailed`), though some third-party reports say `errSecItemNotFound`.
///
/// ## Sources
/// - developer.apple.com/documentation/security/secaccesscontrolcreateflags/biometryany,
///   …/biometrycurrentset, …/userpresence
/// - developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithbiometrics
///   ("Policy evaluation fails if Touch ID or Face ID is unavailable or not enrolled")
/// - Security's `SecItem.c`, `osstatus_for_localauthentication_error` (github.com/darlinghq/darling-security)
/// - github.com/authgear/authgear-sdk-js/issues/259 (-25293 with the biometry flags on a simulator)
package enum BiometryFallback {
    /// The status of an operation whose only constraint is biometry when no reader with an enrolled finger is
    /// there, biometry is locked out, or the enrolled set changed under `.biometryCurrentSet`: `errSecAuthFailed`.
    package static let unavailableStatus: KeychainStatus = .authFailed
    /// The status when the person cancels the prompt: `errSecUserCanceled`.
    package static let cancelledStatus: KeychainStatus = .userCanceled
    /// The status when a prompt would be needed but interaction is not allowed (`kSecUseAuthenticationUISkip`,
    /// `LAContext.interactionNotAllowed`): `errSecInteractionNotAllowed`.
    package static let notInteractiveStatus: KeychainStatus = .interactionNotAllowed
}
