/// swift-keychain's release version, the one place every program's `--version` reads it from.
///
/// `security`, `keychaind`, `git-credential-keychain` and `keychain-sync-server` each print
/// ``line(program:)``. The module depends on nothing, so the sync server (which links no keychain module)
/// shares it too.
package enum KeychainVersion {
    /// The release version. Bump it with every release, in the same commit as CHANGELOG.md's new heading.
    package static let string = "0.1.0"

    /// What `PROGRAM --version` prints: `security 0.1.0 (swift-keychain)`.
    package static func line(program: String) -> String {
        "\(program) \(string) (swift-keychain)"
    }
}
