import KeychainCore
import Testing
@testable import KeychainDaemon

/// The program a peer's remembered permissions are kept under, from keychaind's identification of it.
@Suite struct ConsentProgramTests {
    @Test func aPeerIsRememberedByItsIdentifiedProgram() {
        let sha = String(repeating: "d4", count: 32)
        #expect(
            PeerIdentity(pid: 1, uid: 1000, program: .executable("/usr/bin/foo"), executableSHA256: sha).consentProgram
                == .executable(path: "/usr/bin/foo", sha256: sha))
        #expect(PeerIdentity(pid: 1, uid: 1000, program: .flatpak("org.example.App"), executableSHA256: sha).consentProgram == .flatpak("org.example.App"))
        #expect(PeerIdentity(pid: 1, uid: 1000, program: .snap("tool"), executableSHA256: sha).consentProgram == .snap("tool"))
    }

    /// A process that may run code that is not its program's neither uses nor makes the program's decisions; an
    /// executable that could not be hashed has no identity to remember them by.
    @Test func anUntrustedOrUnhashedPeerHasNone() {
        let sha = String(repeating: "d4", count: 32)
        #expect(PeerIdentity(pid: 1, uid: 1000, program: .executable("/usr/bin/foo"), executableSHA256: sha, untrusted: "started with LD_PRELOAD").consentProgram == nil)
        #expect(PeerIdentity(pid: 1, uid: 1000, program: .flatpak("org.example.App"), executableSHA256: "", untrusted: "traced").consentProgram == nil)
        #expect(PeerIdentity(pid: 1, uid: 1000, program: .executable("/usr/bin/foo"), executableSHA256: "").consentProgram == nil)
    }
}
