import Foundation
import KeychainVersion

/// What the helper says to a person who runs it by hand: `--help` (or `-h`) and `--version`.
///
/// git never passes these; any other operation git does not define is still ignored without a word, as
/// gitcredentials(7) asks of helpers ("If a helper receives any other operation, it should silently ignore
/// the request"), so that operations git adds later do not break older helpers.
enum HelperUsage {
    /// The text `--help` prints on standard output.
    static let text = """
        usage: git-credential-keychain get|store|erase

        git's credential helper backed by the keychain: the Linux counterpart of git-credential-osxkeychain.
        git runs it and writes the credential on its standard input as key=value lines; you do not run it
        yourself. To make git use it:

            git config --global credential.helper keychain

        Operations:
          get      print the username and password stored for the protocol and host git sends (and the path or
                   username when it sends one); the most recently stored when several match
          store    store the username and password git sends for that protocol and host, replacing an older one
          erase    delete the matching credentials

        Credentials are internet passwords in your keychain: `security find-internet-password -s HOST` shows one,
        `security delete-internet-password -s HOST` deletes it. Any other operation is ignored, as git's helper
        protocol asks.

        Options:
          -h, --help    show this help
          --version     show the version

        """

    /// What `--version` prints: `git-credential-keychain 0.1.0 (swift-keychain)`.
    static var version: String { KeychainVersion.line(program: "git-credential-keychain") + "\n" }

    /// The text to print for `operation` when it asks for help or the version, else `nil` (the operation is
    /// git's, or unknown and ignored).
    static func answer(to operation: String) -> String? {
        switch operation {
        case "-h", "--help": text
        case "--version": version
        default: nil
        }
    }
}
