/// An error from a keychain operation.
///
/// Shaped like SwiftNIO's `FileSystemError`: a struct that can grow, carrying a stable ``code``, the
/// Apple ``status`` a SecItem caller sees, a ``message`` that says what to do next, and the underlying
/// ``cause`` when there is one. Messages never contain attribute values or secrets.
public struct KeychainError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public var code: Code
    /// The `OSStatus` Apple's API reports for this failure.
    public var status: KeychainStatus
    /// A human-readable explanation that says what to do next. Never contains a secret or an attribute value.
    public var message: String
    /// The lower-level error that caused this one, if any.
    public var cause: (any Error & Sendable)?
    /// With ``Code/authenticationNeeded``: what each protected item needs before the request can proceed.
    package var presenceNeeded: [PresenceRequirement] = []

    /// Creates an error.
    public init(code: Code, status: KeychainStatus? = nil, message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.status = status ?? code.defaultStatus
        self.message = message
        self.cause = cause
    }

    /// `"<message> (<OSStatus>)"`, plus the cause when present.
    public var description: String {
        var text = "\(message) (OSStatus \(status.rawValue))"
        if let cause { text += "; cause: \(cause)" }
        return text
    }

    /// A stable, growable classification of keychain failures.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code by name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// A parameter or query was malformed (`errSecParam`).
        public static let invalidParameter = Code(rawValue: "invalidParameter")
        /// The item class is unknown (`errSecNoSuchClass`).
        public static let noSuchClass = Code(rawValue: "noSuchClass")
        /// An attribute does not belong to the item class (`errSecNoSuchAttr`).
        public static let noSuchAttribute = Code(rawValue: "noSuchAttribute")
        /// An item with the same primary key exists (`errSecDuplicateItem`).
        public static let duplicateItem = Code(rawValue: "duplicateItem")
        /// No item matched (`errSecItemNotFound`).
        public static let itemNotFound = Code(rawValue: "itemNotFound")
        /// The caller is not entitled to an access group (`errSecMissingEntitlement`).
        public static let missingEntitlement = Code(rawValue: "missingEntitlement")
        /// The item's protection class is not available in the current lock state (`errSecInteractionNotAllowed`).
        public static let interactionNotAllowed = Code(rawValue: "interactionNotAllowed")
        /// Authentication failed, or a passcode is required and none is set (`errSecAuthFailed`).
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
        /// Stored data failed to decrypt or decode (`errSecDecode`).
        public static let corruptData = Code(rawValue: "corruptData")
        /// The keychain files could not be read or written (`errSecIO`).
        public static let io = Code(rawValue: "io")
        /// The keychain database could not be opened or is unusable (`errSecNotAvailable`).
        public static let notAvailable = Code(rawValue: "notAvailable")
        /// The operation is not implemented (`errSecUnimplemented`).
        public static let unimplemented = Code(rawValue: "unimplemented")
        /// An unexpected internal failure (`errSecInternal`).
        public static let `internal` = Code(rawValue: "internal")
        /// A signature did not verify (`errSecVerifyFailed`).
        public static let verifyFailed = Code(rawValue: "verifyFailed")
        /// A certificate chain is not trusted (`errSecNotTrusted`).
        public static let notTrusted = Code(rawValue: "notTrusted")
        /// The keychain's device key is sealed to a TPM that is not here: the folder was copied from another
        /// machine, or this machine's TPM was cleared or cannot be reached (`errSecInvalidKeychain`).
        public static let sealedToAnotherMachine = Code(rawValue: "sealedToAnotherMachine")
        /// The person cancelled a prompt, or it timed out (`errSecUserCanceled`).
        public static let userCanceled = Code(rawValue: "userCanceled")
        /// An item needs the person's presence before this request may use it (`errSecAuthNeeded`); the client
        /// obtains the proof and retries (see ``KeychainError/presenceNeeded``). Never seen by a SecItem caller.
        public static let authenticationNeeded = Code(rawValue: "authenticationNeeded")
        /// This machine was removed from its sync account: it no longer syncs until it joins again with a new
        /// device key (`errSecAuthFailed`).
        public static let syncDeviceRemoved = Code(rawValue: "syncDeviceRemoved")

        /// The `OSStatus` reported for this code unless the error says otherwise.
        public var defaultStatus: KeychainStatus {
            switch self {
            case .invalidParameter: .param
            case .noSuchClass: .noSuchClass
            case .noSuchAttribute: .noSuchAttribute
            case .duplicateItem: .duplicateItem
            case .itemNotFound: .itemNotFound
            case .missingEntitlement: .missingEntitlement
            case .interactionNotAllowed: .interactionNotAllowed
            case .authenticationFailed, .syncDeviceRemoved: .authFailed
            case .corruptData: .decode
            case .io: .io
            case .notAvailable: .notAvailable
            case .unimplemented: .unimplemented
            case .verifyFailed: .verifyFailed
            case .notTrusted: .notTrusted
            case .sealedToAnotherMachine: .invalidKeychain
            case .userCanceled: .userCanceled
            case .authenticationNeeded: .authNeeded
            default: .internal
            }
        }
    }
}

extension KeychainError {
    static func param(_ message: String) -> KeychainError {
        KeychainError(code: .invalidParameter, message: message)
    }

    static func notFound(_ message: String = "No item matched the query. Check the class, attributes, access group and kSecAttrSynchronizable.") -> KeychainError {
        KeychainError(code: .itemNotFound, message: message)
    }

    /// A query met an item of class `itemClass` whose stored row is damaged (`errSecDecode`).
    static func damagedItem(_ itemClass: ItemClass) -> KeychainError {
        KeychainError(
            code: .corruptData,
            message:
                "An item of class \(itemClass.rawValue) that the query could match is damaged: its stored row is malformed or fails authentication. Run `security verify-keychain` to list damaged items, and restore them from a backup if you have one."
        )
    }
}
