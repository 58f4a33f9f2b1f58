public import KeychainCore

// KeychainKit's functions throw `KeychainError`, whose `status` is a `KeychainStatus`. Both are defined in the
// engine's module, KeychainCore, and named here, so `import KeychainKit` is all a user needs; nothing else of
// KeychainCore is re-exported, so a program that imports only KeychainKit (the `security` tool does) can reach
// the engine only through KeychainKit's public API.

/// A keychain failure: what kind of failure (its `code`), Apple's `OSStatus` for it
/// (its `status`), and a message that says what to do next.
public typealias KeychainError = KeychainCore.KeychainError

/// An `OSStatus` of Apple's keychain API, with its message.
public typealias KeychainStatus = KeychainCore.KeychainStatus
