#if canImport(Security) && !KEYCHAIN_FORCE_BUILD_API
@_exported import Security
#else
import Foundation
import KeychainCore

// Result codes (Apple's SecBase.h). Each comment is Apple's message, which SecCopyErrorMessageString returns.

/// No error.
public var errSecSuccess: OSStatus { 0 }
/// Function or operation not implemented.
public var errSecUnimplemented: OSStatus { -4 }
/// The disk is full.
public var errSecDiskFull: OSStatus { -34 }
/// The disk is full (the older spelling of `errSecDiskFull`).
public var errSecDskFull: OSStatus { -34 }
/// I/O error.
public var errSecIO: OSStatus { -36 }
/// File already open with write permission.
public var errSecOpWr: OSStatus { -49 }
/// One or more parameters passed to a function were not valid.
public var errSecParam: OSStatus { -50 }
/// Write permissions error.
public var errSecWrPerm: OSStatus { -61 }
/// Failed to allocate memory.
public var errSecAllocate: OSStatus { -108 }
/// User canceled the operation.
public var errSecUserCanceled: OSStatus { -128 }
/// Bad parameter or invalid state for operation.
public var errSecBadReq: OSStatus { -909 }
/// A necessary internal component is not available.
public var errSecInternalComponent: OSStatus { -2070 }
/// An underlying Core Foundation error occurred (Apple gives this code no message).
public var errSecCoreFoundationUnknown: OSStatus { -4960 }
/// Equals `errSecUnimplemented`.
public var errSecUnsupportedOperation: OSStatus { -4 }
/// No keychain is available. You may need to restart your computer.
public var errSecNotAvailable: OSStatus { -25291 }
/// This keychain cannot be modified.
public var errSecReadOnly: OSStatus { -25292 }
/// The user name or passphrase you entered is not correct.
public var errSecAuthFailed: OSStatus { -25293 }
/// The specified keychain could not be found.
public var errSecNoSuchKeychain: OSStatus { -25294 }
/// The specified keychain is not a valid keychain file.
public var errSecInvalidKeychain: OSStatus { -25295 }
/// A keychain with the same name already exists.
public var errSecDuplicateKeychain: OSStatus { -25296 }
/// The specified callback function is already installed.
public var errSecDuplicateCallback: OSStatus { -25297 }
/// The specified callback function is not valid.
public var errSecInvalidCallback: OSStatus { -25298 }
/// The specified item already exists in the keychain.
public var errSecDuplicateItem: OSStatus { -25299 }
/// The specified item could not be found in the keychain.
public var errSecItemNotFound: OSStatus { -25300 }
/// There is not enough memory available to use the specified item.
public var errSecBufferTooSmall: OSStatus { -25301 }
/// This item contains information which is too large or in a format that cannot be displayed.
public var errSecDataTooLarge: OSStatus { -25302 }
/// The specified attribute does not exist.
public var errSecNoSuchAttr: OSStatus { -25303 }
/// The specified item is no longer valid. It may have been deleted from the keychain.
public var errSecInvalidItemRef: OSStatus { -25304 }
/// Unable to search the current keychain.
public var errSecInvalidSearchRef: OSStatus { -25305 }
/// The specified item does not appear to be a valid keychain item.
public var errSecNoSuchClass: OSStatus { -25306 }
/// A default keychain could not be found.
public var errSecNoDefaultKeychain: OSStatus { -25307 }
/// User interaction is not allowed.
public var errSecInteractionNotAllowed: OSStatus { -25308 }
/// The specified attribute could not be modified.
public var errSecReadOnlyAttr: OSStatus { -25309 }
/// This keychain was created by a different version of the system software and cannot be opened.
public var errSecWrongSecVersion: OSStatus { -25310 }
/// This item specifies a key size which is too large or too small.
public var errSecKeySizeNotAllowed: OSStatus { -25311 }
/// A required component (data storage module) could not be loaded. You may need to restart your computer.
public var errSecNoStorageModule: OSStatus { -25312 }
/// A required component (certificate module) could not be loaded. You may need to restart your computer.
public var errSecNoCertificateModule: OSStatus { -25313 }
/// A required component (policy module) could not be loaded. You may need to restart your computer.
public var errSecNoPolicyModule: OSStatus { -25314 }
/// User interaction is required, but is currently not allowed.
public var errSecInteractionRequired: OSStatus { -25315 }
/// The contents of this item cannot be retrieved.
public var errSecDataNotAvailable: OSStatus { -25316 }
/// The contents of this item cannot be modified.
public var errSecDataNotModifiable: OSStatus { -25317 }
/// One or more certificates required to validate this certificate cannot be found.
public var errSecCreateChainFailed: OSStatus { -25318 }
/// The specified preferences domain is not valid.
public var errSecInvalidPrefsDomain: OSStatus { -25319 }
/// In dark wake, no UI possible
public var errSecInDarkWake: OSStatus { -25320 }
/// The specified access control list is not in standard (simple) form.
public var errSecACLNotSimple: OSStatus { -25240 }
/// The specified policy cannot be found.
public var errSecPolicyNotFound: OSStatus { -25241 }
/// The specified trust setting is invalid.
public var errSecInvalidTrustSetting: OSStatus { -25242 }
/// The specified item has no access control.
public var errSecNoAccessForItem: OSStatus { -25243 }
/// Invalid attempt to change the owner of this item.
public var errSecInvalidOwnerEdit: OSStatus { -25244 }
/// No trust results are available.
public var errSecTrustNotAvailable: OSStatus { -25245 }
/// Import/Export format unsupported.
public var errSecUnsupportedFormat: OSStatus { -25256 }
/// Unknown format in import.
public var errSecUnknownFormat: OSStatus { -25257 }
/// Key material must be wrapped for export.
public var errSecKeyIsSensitive: OSStatus { -25258 }
/// An attempt was made to import multiple private keys.
public var errSecMultiplePrivKeys: OSStatus { -25259 }
/// Passphrase is required for import/export.
public var errSecPassphraseRequired: OSStatus { -25260 }
/// The password reference was invalid.
public var errSecInvalidPasswordRef: OSStatus { -25261 }
/// The Trust Settings Record was corrupted.
public var errSecInvalidTrustSettings: OSStatus { -25262 }
/// No Trust Settings were found.
public var errSecNoTrustSettings: OSStatus { -25263 }
/// MAC verification failed during PKCS12 import (wrong password?)
public var errSecPkcs12VerifyFailure: OSStatus { -25264 }
/// A certificate was not signed by its proposed parent.
public var errSecNotSigner: OSStatus { -26267 }
/// Unable to decode the provided data.
public var errSecDecode: OSStatus { -26275 }
/// A required entitlement isn't present.
public var errSecMissingEntitlement: OSStatus { -34018 }
/// Client is restricted and is not permitted to perform this operation.
public var errSecRestrictedAPI: OSStatus { -34020 }
/// The required service is not available.
public var errSecServiceNotAvailable: OSStatus { -67585 }
/// The client ID is not correct.
public var errSecInsufficientClientID: OSStatus { -67586 }
/// A device reset has occurred.
public var errSecDeviceReset: OSStatus { -67587 }
/// A device failure has occurred.
public var errSecDeviceFailed: OSStatus { -67588 }
/// An internal error has occurred.
public var errSecInternalError: OSStatus { -67671 }
/// A memory error has occurred.
public var errSecMemoryError: OSStatus { -67672 }
/// Invalid data was encountered.
public var errSecInvalidData: OSStatus { -67673 }
/// A cryptographic verification failure has occurred.
public var errSecVerifyFailed: OSStatus { -67808 }
/// The trust policy was not trusted.
public var errSecNotTrusted: OSStatus { -67843 }
/// An incomplete certificate revocation check occurred.
public var errSecIncompleteCertRevocationCheck: OSStatus { -67635 }
/// The trust setting for this policy was set to Deny.
public var errSecTrustSettingDeny: OSStatus { -67654 }
/// The certificate was revoked.
public var errSecCertificateRevoked: OSStatus { -67820 }
/// An invalid value was detected.
public var errSecInvalidValue: OSStatus { -67694 }

/// Returns a string explaining the meaning of a security result code.
///
/// As on iOS, a code without a message yields `"OSStatus <code>"`, never `nil`.
/// - Parameters:
///   - status: A result code of type `OSStatus` returned by a security function.
///   - reserved: Reserved for future use. Pass `nil`.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    KeychainStatus(status).message as NSString
}
#endif
