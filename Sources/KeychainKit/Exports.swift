public import KeychainCore

// KeychainKit's functions throw `KeychainError`, whose `status` is a `KeychainStatus`. Both are defined in the
// engine's module, KeychainCore, and named here, so `import KeychainKit` is all a user needs; nothing else of
// KeychainCore is re-exported, so a program that imports only KeychainKit reaches the engine only through
// KeychainKit's public API. (The `security` tool, in this package, also uses a few `package` members of KeychainKit,
// such as `KeychainStore.importSecretServiceItems` and `KeychainFiles`, which apps do not see.)

/// A keychain failure: what kind of failure (its `code`), Apple's `OSStatus` for it
/// (its `status`), and a message that says what to do next.
public typealias KeychainError = KeychainCore.KeychainError

/// An `OSStatus` of Apple's keychain API, with its message.
public typealias KeychainStatus = KeychainCore.KeychainStatus
