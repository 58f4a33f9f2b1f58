#if Network
/// The state of a device in an account.
package enum DeviceState: String, Sendable, Equatable {
    /// The device asked to join and waits for a trusted device's approval.
    case pending
    /// The device is in the account's device list.
    case trusted
    /// The device was taken out of the device list.
    case removed
}

/// The device whose signature a request carries, as the authentication middleware established it.
package struct AuthenticatedDevice: Sendable, Equatable {
    /// The account named by the request's path (empty for account creation).
    package var accountID: String
    /// The signer's device id.
    package var deviceID: String
    /// The signer's raw Ed25519 public key.
    package var signingKey: [UInt8]
    /// The device's state in the account, or `nil` when the account does not know it yet (creation, joining).
    package var state: DeviceState?

    /// The device of the request being handled, set by ``AuthenticationMiddleware`` around the handler.
    @TaskLocal package static var current: AuthenticatedDevice?
}
#endif
