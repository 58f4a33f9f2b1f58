// `git-credential-keychain`, on its own for development and the tests; installed, it is the multi-call `keychain`
// binary.
import GitCredentialCommand

GitCredentialHelper.main(arguments: CommandLine.arguments)
