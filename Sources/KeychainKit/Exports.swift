// KeychainKit's functions throw `KeychainError`, whose `status` is a `KeychainStatus`: both are public in
// KeychainCore and re-exported here, so `import KeychainKit` is all a user needs. Everything else in
// KeychainCore has `package` access and stays hidden behind KeychainKit's own types.
@_exported import KeychainCore
