// `keychaind`, on its own for development and the tests; installed, it is the multi-call `keychain` binary.
import KeychaindCommand

await Keychaind.runCommandLine()
