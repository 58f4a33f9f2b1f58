import KeychainCore
import KeychainDBus

/// A D-Bus error answered to a Secret Service call: its name (the spec's, or D-Bus's standard ones) and a message
/// that says what to do.
struct SecretServiceError: Error, Sendable {
    var name: String
    var message: String

    static let isLocked = "org.freedesktop.Secret.Error.IsLocked"
    static let noSession = "org.freedesktop.Secret.Error.NoSession"
    static let noSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    static let failed = "org.freedesktop.DBus.Error.Failed"

    static func invalid(_ message: String) -> SecretServiceError { .init(name: invalidArgs, message: message) }
    static func noObject(_ path: String) -> SecretServiceError {
        .init(name: noSuchObject, message: "No such object: \(path). It was deleted, or this program may not see it.")
    }
    /// IsLocked for `what`; with the reason this connection's last unlock prompt opened nothing, when it had one.
    static func locked(_ what: String, lastRefusal: String? = nil) -> SecretServiceError {
        guard let lastRefusal else {
            return .init(name: isLocked, message: "\(what) is locked for this program. Call Unlock and complete its prompt first.")
        }
        return .init(name: isLocked, message: "\(what) is locked for this program: its last Unlock opened nothing. \(lastRefusal)")
    }

    /// The D-Bus error for a keychain failure.
    init(_ error: KeychainError) {
        message = error.message
        switch error.code {
        case .itemNotFound: name = Self.noSuchObject
        case .interactionNotAllowed: name = Self.isLocked
        case .invalidParameter: name = Self.invalidArgs
        case .authenticationFailed, .missingEntitlement, .userCanceled: name = Self.accessDenied
        default: name = Self.failed
        }
    }

    init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}
