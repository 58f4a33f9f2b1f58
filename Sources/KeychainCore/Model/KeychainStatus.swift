/// A result code of a keychain operation, with the same numeric values as Apple's `OSStatus` codes.
///
/// Modelled on GRDB's `ResultCode`: a raw-value struct with static members, so that codes this library
/// does not know yet still round-trip unchanged.
public struct KeychainStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `OSStatus` value.
    public let rawValue: Int32

    /// Creates a status from an `OSStatus` value.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Creates a status from an `OSStatus` value.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// No error.
    public static let success = KeychainStatus(0)
    /// Function or operation not implemented.
    public static let unimplemented = KeychainStatus(-4)
    /// The disk is full.
    public static let diskFull = KeychainStatus(-34)
    /// I/O error.
    public static let io = KeychainStatus(-36)
    /// One or more parameters passed to a function were not valid.
    public static let param = KeychainStatus(-50)
    /// Write permissions error.
    public static let writePermission = KeychainStatus(-61)
    /// Failed to allocate memory.
    public static let allocate = KeychainStatus(-108)
    /// User canceled the operation.
    public static let userCanceled = KeychainStatus(-128)
    /// Bad parameter or invalid state for operation.
    public static let badRequest = KeychainStatus(-909)
    /// A necessary internal component is not available.
    public static let internalComponent = KeychainStatus(-2070)
    /// Import/Export format unsupported (`errSecUnsupportedFormat`).
    public static let unsupportedFormat = KeychainStatus(-25256)
    /// Unknown format in import (`errSecUnknownFormat`).
    public static let unknownFormat = KeychainStatus(-25257)
    /// No keychain is available.
    public static let notAvailable = KeychainStatus(-25291)
    /// This keychain cannot be modified.
    public static let readOnly = KeychainStatus(-25292)
    /// The user name or passphrase you entered is not correct.
    public static let authFailed = KeychainStatus(-25293)
    /// The specified keychain could not be found.
    public static let noSuchKeychain = KeychainStatus(-25294)
    /// The specified keychain is not a valid keychain file.
    public static let invalidKeychain = KeychainStatus(-25295)
    /// A keychain with the same name already exists.
    public static let duplicateKeychain = KeychainStatus(-25296)
    /// The specified item already exists in the keychain.
    public static let duplicateItem = KeychainStatus(-25299)
    /// The specified item could not be found in the keychain.
    public static let itemNotFound = KeychainStatus(-25300)
    /// There is not enough memory available to use the specified item.
    public static let bufferTooSmall = KeychainStatus(-25301)
    /// This item contains information which is too large or in a format that cannot be displayed.
    public static let dataTooLarge = KeychainStatus(-25302)
    /// The specified attribute does not exist.
    public static let noSuchAttribute = KeychainStatus(-25303)
    /// The specified item is no longer valid.
    public static let invalidItemRef = KeychainStatus(-25304)
    /// Unable to search the current keychain.
    public static let invalidSearchRef = KeychainStatus(-25305)
    /// The specified item does not appear to be a valid keychain item.
    public static let noSuchClass = KeychainStatus(-25306)
    /// A default keychain could not be found.
    public static let noDefaultKeychain = KeychainStatus(-25307)
    /// User interaction is not allowed.
    public static let interactionNotAllowed = KeychainStatus(-25308)
    /// The specified attribute could not be modified.
    public static let readOnlyAttribute = KeychainStatus(-25309)
    /// This keychain was created by a different version of the system software and cannot be opened.
    public static let wrongSecVersion = KeychainStatus(-25310)
    /// User interaction is required, but is currently not allowed.
    public static let interactionRequired = KeychainStatus(-25315)
    /// Authentication is needed before the requested action can be performed (`errSecAuthNeeded`).
    public static let authNeeded = KeychainStatus(-25330)
    /// The contents of this item cannot be retrieved.
    public static let dataNotAvailable = KeychainStatus(-25316)
    /// The contents of this item cannot be modified.
    public static let dataNotModifiable = KeychainStatus(-25317)
    /// Unable to decode the provided data.
    public static let decode = KeychainStatus(-26275)
    /// An internal error occurred in the Security framework.
    public static let `internal` = KeychainStatus(-26276)
    /// A required entitlement isn't present.
    public static let missingEntitlement = KeychainStatus(-34018)
    /// Client is restricted and is not permitted to perform this operation.
    public static let restrictedAPI = KeychainStatus(-34020)
    /// An internal error has occurred.
    public static let internalError = KeychainStatus(-67671)
    /// An invalid value was detected.
    public static let invalidValue = KeychainStatus(-67694)
    /// A cryptographic verification failure has occurred (`errSecVerifyFailed`).
    public static let verifyFailed = KeychainStatus(-67808)
    /// The trust policy was not trusted (`errSecNotTrusted`).
    public static let notTrusted = KeychainStatus(-67843)

    /// Apple's English message for this status, or `nil` when Apple defines none.
    public var knownMessage: String? { KeychainStatus.messages[rawValue] }

    /// Apple's English message for this status, falling back to `"OSStatus <n>"` as iOS does.
    public var message: String { knownMessage ?? "OSStatus \(rawValue)" }

    /// `"<message> (<code>)"`.
    public var description: String { "\(message) (\(rawValue))" }

    /// The exit status the `security` command uses for this status: its low byte, as on macOS
    /// (`errSecItemNotFound` exits 44, `errSecDuplicateItem` 45, `errSecAuthFailed` 51).
    public var exitCode: Int32 { rawValue == 0 ? 0 : Int32(UInt8(truncatingIfNeeded: rawValue)) }

    // The strings of Apple's `SecBase.h` comments, which Apple's own string table is generated from.
    static let messages: [Int32: String] = [
        0: "No error.",
        -4: "Function or operation not implemented.",
        -34: "The disk is full.",
        -36: "I/O error.",
        -49: "File already open with write permission.",
        -50: "One or more parameters passed to a function were not valid.",
        -61: "Write permissions error.",
        -108: "Failed to allocate memory.",
        -128: "User canceled the operation.",
        -25330: "Auth is needed before the requested action can be performed.",
        -909: "Bad parameter or invalid state for operation.",
        -2070: "A necessary internal component is not available.",
        -25291: "No keychain is available. You may need to restart your computer.",
        -25292: "This keychain cannot be modified.",
        -25293: "The user name or passphrase you entered is not correct.",
        -25294: "The specified keychain could not be found.",
        -25295: "The specified keychain is not a valid keychain file.",
        -25296: "A keychain with the same name already exists.",
        -25297: "The specified callback function is already installed.",
        -25298: "The specified callback function is not valid.",
        -25299: "The specified item already exists in the keychain.",
        -25300: "The specified item could not be found in the keychain.",
        -25301: "There is not enough memory available to use the specified item.",
        -25302: "This item contains information which is too large or in a format that cannot be displayed.",
        -25303: "The specified attribute does not exist.",
        -25304: "The specified item is no longer valid. It may have been deleted from the keychain.",
        -25305: "Unable to search the current keychain.",
        -25306: "The specified item does not appear to be a valid keychain item.",
        -25307: "A default keychain could not be found.",
        -25308: "User interaction is not allowed.",
        -25309: "The specified attribute could not be modified.",
        -25310: "This keychain was created by a different version of the system software and cannot be opened.",
        -25311: "This item specifies a key size which is too large or too small.",
        -25312: "A required component (data storage module) could not be loaded. You may need to restart your computer.",
        -25313: "A required component (certificate module) could not be loaded. You may need to restart your computer.",
        -25314: "A required component (policy module) could not be loaded. You may need to restart your computer.",
        -25315: "User interaction is required, but is currently not allowed.",
        -25316: "The contents of this item cannot be retrieved.",
        -25317: "The contents of this item cannot be modified.",
        -25318: "One or more certificates required to validate this certificate cannot be found.",
        -25319: "The specified preferences domain is not valid.",
        -25320: "In dark wake, no UI possible",
        -25240: "The specified access control list is not in standard (simple) form.",
        -25241: "The specified policy cannot be found.",
        -25242: "The specified trust setting is invalid.",
        -25243: "The specified item has no access control.",
        -25244: "Invalid attempt to change the owner of this item.",
        -25245: "No trust results are available.",
        -25256: "Import/Export format unsupported.",
        -25257: "Unknown format in import.",
        -25258: "Key material must be wrapped for export.",
        -25259: "An attempt was made to import multiple private keys.",
        -25260: "Passphrase is required for import/export.",
        -25261: "The password reference was invalid.",
        -25262: "The Trust Settings Record was corrupted.",
        -25263: "No Trust Settings were found.",
        -25264: "MAC verification failed during PKCS12 import (wrong password?)",
        -26267: "A certificate was not signed by its proposed parent.",
        -26275: "Unable to decode the provided data.",
        -26276: "An internal error occurred in the Security framework.",
        -34018: "A required entitlement isn't present.",
        -34020: "Client is restricted and is not permitted to perform this operation.",
        -67585: "The required service is not available.",
        -67586: "The client ID is not correct.",
        -67587: "A device reset has occurred.",
        -67588: "A device failure has occurred.",
        -67671: "An internal error has occurred.",
        -67672: "A memory error has occurred.",
        -67673: "Invalid data was encountered.",
        -67694: "An invalid value was detected.",
        -67808: "A cryptographic verification failure has occurred.",
        -67843: "The trust policy was not trusted.",
        -67635: "An incomplete certificate revocation check occurred.",
        -67654: "The trust setting for this policy was set to Deny.",
        -67820: "The certificate was revoked.",
    ]
}
