import Foundation
import KeychainClient
import KeychainCore

/// What an item's secret (or a key's use) needs besides the keychain being unlocked: the user's presence, the
/// keychain passcode, a fingerprint, an application password — Apple's `SecAccessControl`, typed.
///
/// Give it to ``Keychain/accessControl(_:)``; items written through that keychain get it, and reading their
/// secret asks the person at the machine (through pinentry, by whoever holds the keys) unless a proof held under
/// the call's ``KeychainAuthentication/context`` covers it. Their attributes stay readable without a prompt,
/// and removing them never asks.
///
/// ```swift
/// let vault = Keychain(service: "com.example.app")
///     .accessControl(try KeychainAccessControl(.devicePasscode, accessibility: .whenUnlockedThisDeviceOnly))
/// try vault.set("s3cret", for: "alice")          // no prompt: writing is always allowed
/// let secret = try vault.string(for: "alice")    // asks for the keychain passcode
/// ```
public struct KeychainAccessControl: Sendable, Hashable, CustomStringConvertible {
    /// The constraints (Apple's `SecAccessControlCreateFlags`, with its bit values).
    public struct Constraints: OptionSet, Sendable, Hashable {
        /// The constraints' bits, as in `SecAccessControlCreateFlags`.
        public let rawValue: UInt64

        /// Constraints from their bits.
        public init(rawValue: UInt64) { self.rawValue = rawValue }

        /// A fingerprint when a reader has an enrolled finger, else the keychain passcode
        /// (`kSecAccessControlUserPresence`).
        public static let userPresence = Constraints(rawValue: AccessControlFlags.userPresence.rawValue)
        /// Any enrolled fingerprint (`kSecAccessControlBiometryAny`).
        public static let biometryAny = Constraints(rawValue: AccessControlFlags.biometryAny.rawValue)
        /// A fingerprint among those enrolled when the item was stored (`kSecAccessControlBiometryCurrentSet`).
        public static let biometryCurrentSet = Constraints(rawValue: AccessControlFlags.biometryCurrentSet.rawValue)
        /// The keychain passcode, or a confirmation when none is set (`kSecAccessControlDevicePasscode`).
        public static let devicePasscode = Constraints(rawValue: AccessControlFlags.devicePasscode.rawValue)
        /// Any one of the constraints suffices (`kSecAccessControlOr`).
        public static let or = Constraints(rawValue: AccessControlFlags.or.rawValue)
        /// Every constraint is needed (`kSecAccessControlAnd`; also what several constraints mean without `.or`).
        public static let and = Constraints(rawValue: AccessControlFlags.and.rawValue)
        /// The constraints guard a private key's use in the keychain's token rather than reading an item
        /// (`kSecAccessControlPrivateKeyUsage`).
        public static let privateKeyUsage = Constraints(rawValue: AccessControlFlags.privateKeyUsage.rawValue)
        /// An application password is needed as well (`kSecAccessControlApplicationPassword`).
        public static let applicationPassword = Constraints(rawValue: AccessControlFlags.applicationPassword.rawValue)
    }

    /// The engine's access control.
    let control: AccessControl

    /// An access control; its rules are Apple's (`SecAccessControlCreateWithFlags`).
    ///
    /// - Parameters:
    ///   - constraints: What reading the secret (or, with ``Constraints/privateKeyUsage``, using the key) needs.
    ///   - accessibility: When the secret can be read at all; written items take it as their accessibility.
    /// - Throws: `KeychainError` with status `KeychainStatus/param` (-50) for constraints Apple rejects: both
    ///   `.or` and `.and`, both biometry constraints, or `.userPresence` with anything but
    ///   `.applicationPassword` and `.privateKeyUsage`.
    public init(_ constraints: Constraints, accessibility: KeychainAccessibility = .whenUnlocked) throws(KeychainError) {
        control = try AccessControl(protection: accessibility.protectionClass, flags: AccessControlFlags(rawValue: constraints.rawValue))
    }

    init(_ control: AccessControl) { self.control = control }

    /// The constraints.
    public var constraints: Constraints { Constraints(rawValue: control.flags.rawValue) }

    /// The accessibility written items take.
    public var accessibility: KeychainAccessibility { KeychainAccessibility(control.protection) }

    /// Whether some operation needs the user's presence or a password (what ``KeychainAuthentication/UI/skipProtected``
    /// leaves out).
    public var isProtected: Bool { control.isProtected }

    /// The constraints' names joined by `,` (for example `devicePasscode,or,biometryAny`), then `;` and the
    /// accessibility (for example `devicePasscode;whenUnlocked`).
    public var description: String {
        let names = Self.names.filter { constraints.contains($0.constraint) }.map(\.name)
        return (names.isEmpty ? "none" : names.joined(separator: ",")) + ";" + "\(accessibility)"
    }

    /// Each constraint's name, as ``description`` and the `security` tool spell them.
    public static let names: [(constraint: Constraints, name: String)] = [
        (.userPresence, "userPresence"), (.devicePasscode, "devicePasscode"), (.biometryAny, "biometryAny"),
        (.biometryCurrentSet, "biometryCurrentSet"), (.or, "or"), (.and, "and"), (.privateKeyUsage, "privateKeyUsage"),
        (.applicationPassword, "applicationPassword"),
    ]

    /// The stored attribute value.
    var attributeValue: AttributeValue { .data(control.encoded) }
}

extension KeychainAccessControl.Constraints {
    /// The constraint named `name` (one of ``KeychainAccessControl/names``, case-sensitive); nil for another name.
    public init?(name: String) {
        guard let found = KeychainAccessControl.names.first(where: { $0.name == name }) else { return nil }
        self = found.constraint
    }
}

/// How a call may ask for the user's presence when an item needs it (`kSecUseAuthenticationUI`,
/// `kSecUseOperationPrompt` and `kSecUseAuthenticationContext`, typed).
///
/// ```swift
/// let context = KeychainAuthenticationContext(reuseDuration: 60)
/// let vault = Keychain(service: "com.example.app")
///     .authentication(KeychainAuthentication(.allowPrompt, reason: "Sign in to example.com", context: context))
/// _ = try vault.string(for: "alice")   // asks once …
/// _ = try vault.string(for: "bob")     // … and, within 60 s, not again
/// try context.invalidate()
/// ```
public struct KeychainAuthentication: Sendable, Hashable {
    /// What a call does when an item needs a proof it does not hold.
    public enum UI: Sendable, Hashable {
        /// Ask the person (`kSecUseAuthenticationUIAllow`, the default).
        case allowPrompt
        /// Fail with `KeychainStatus/interactionNotAllowed` (-25308) instead (`kSecUseAuthenticationUIFail`).
        case failIfPrompt
        /// Leave protected items out of reads, as if they were not there (`kSecUseAuthenticationUISkip`).
        case skipProtected
    }

    /// What a call does when an item needs a proof.
    public var ui: UI
    /// The reason a prompt shows (`kSecUseOperationPrompt`); the context's own reason when nil.
    public var reason: String?
    /// The context whose proofs the call may use and keep; nil gives each call a context of its own.
    public var context: KeychainAuthenticationContext?

    /// Options for a call.
    public init(_ ui: UI = .allowPrompt, reason: String? = nil, context: KeychainAuthenticationContext? = nil) {
        self.ui = ui
        self.reason = reason
        self.context = context
    }

    /// Ask the person when an item needs it (the default).
    public static let allowPrompt = KeychainAuthentication(.allowPrompt)
    /// Never ask: fail with `KeychainStatus/interactionNotAllowed` (-25308).
    public static let failIfPrompt = KeychainAuthentication(.failIfPrompt)
    /// Never ask: leave protected items out.
    public static let skipProtected = KeychainAuthentication(.skipProtected)

    /// The engine's options.
    var options: AuthenticationOptions {
        var options = AuthenticationOptions()
        if let context { options.apply(context.value) }
        options.ui =
            switch ui {
            case .allowPrompt: .allow
            case .failIfPrompt: .fail
            case .skipProtected: .skip
            }
        options.operationPrompt = reason
        return options
    }
}

/// An authentication context (Apple's `LAContext`, as a value): the calls made with it share the proofs of
/// presence obtained under it for its ``reuseDuration``.
///
/// Copies of a context are the same context (they share its identifier). A proof is kept where the keys are,
/// bound to this program and the context, and forgotten when the keychain locks or ``invalidate(in:)`` is called.
public struct KeychainAuthenticationContext: Sendable, Hashable {
    /// The identifier the keychain keeps proofs under.
    let id: AuthenticationContextID
    private var storedReuseDuration: Duration = .zero

    /// How long a proof obtained under the context serves later calls: zero (the default) means only the call that
    /// asked; at most 300 seconds (Apple's `LATouchIDAuthenticationMaximumAllowableReuseDuration`), and longer
    /// durations are stored as 300 seconds, negative ones as zero.
    public var reuseDuration: Duration {
        get { storedReuseDuration }
        set { storedReuseDuration = min(max(newValue, .zero), .seconds(AuthenticationOptions.maximumReuseDuration)) }
    }
    /// The reason a prompt shows when the call gives none (`LAContext.localizedReason`).
    public var reason: String?
    /// Whether calls with this context must never prompt (`LAContext.interactionNotAllowed`).
    public var interactionNotAllowed = false
    /// An application password to use instead of asking for it (`LAContext.setCredential(_:type:)`).
    public var applicationPassword: Data?

    /// A new context, with no proof yet.
    public init(reuseDuration: Duration = .zero, reason: String? = nil) {
        id = .random()
        self.reason = reason
        self.reuseDuration = reuseDuration
    }

    /// Makes the keychain of `store` (the default store when nil) forget the proofs this program holds under the
    /// context (`LAContext.invalidate()`). The context can be used again afterwards; it then holds no proof.
    public func invalidate(in store: KeychainStore? = nil) throws(KeychainError) {
        let target: KeychainStore
        if let store { target = store } else { target = try KeychainStore.default }
        try target.connection.invalidate(context: id)
    }

    /// What a call carries.
    var value: AuthenticationContextValue {
        AuthenticationContextValue(
            id: id, localizedReason: reason, interactionNotAllowed: interactionNotAllowed,
            reuseDuration: reuseDuration.timeInterval, applicationPassword: applicationPassword)
    }
}

extension KeychainItem {
    /// The item's access control (`kSecAttrAccessControl`), or nil when it has none.
    public var accessControl: KeychainAccessControl? {
        guard case .data(let bytes)? = attributes["accc"], let control = AccessControl(encoded: bytes) else { return nil }
        return KeychainAccessControl(control)
    }
}
