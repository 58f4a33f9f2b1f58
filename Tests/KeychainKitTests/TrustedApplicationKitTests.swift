import Foundation
import KeychainKit
import KeychainTestSupport
import Testing

/// KeychainKit's trusted applications: ``Keychain/trustedApplications(_:)`` writes the list, ``Keychain/Attributes``
/// reads it, and a store of other access groups in a program the list names reads the item (in-process, the program
/// is this test executable).
@Suite struct TrustedApplicationKitTests {
    @Test func aListedProgramReadsTheItemOfAnotherGroup() throws {
        try withTemporaryDirectory { directory in
            let owner = try KeychainStore(directory: directory, accessGroups: ["owner"])
            let other = try KeychainStore(directory: directory, accessGroups: ["other"])
            let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let trusting = Keychain(service: "svc", in: owner).trustedApplications([try .program(atPath: exe), .securityTool])
            try trusting.set("shared", for: "k")
            try Keychain(service: "svc", in: owner).set("private", for: "mine")
            #expect(try Keychain(service: "svc", in: owner).attributes(for: "k")?.trustedApplications.map(\.term) == [exe, "apple-tool:"])
            #expect(try Keychain(service: "svc", in: other).string(for: "k") == "shared")
            #expect(try Keychain(service: "svc", in: other).string(for: "mine") == nil)
            // The owner removes the list with an empty one.
            try Keychain(service: "svc", in: owner).trustedApplications([]).set("shared", for: "k")
            #expect(try Keychain(service: "svc", in: owner).attributes(for: "k")?.trustedApplications == [])
            #expect(try Keychain(service: "svc", in: other).string(for: "k") == nil)
        }
    }

    @Test func entriesAreChecked() throws {
        #expect(try KeychainTrustedApplication("teamid:ABCDE12345").term == "teamid:ABCDE12345")
        #expect(try KeychainTrustedApplication.flatpak("org.example.App").term == "flatpak:org.example.App")
        #expect(KeychainTrustedApplication.anyApplication.term == "*")
        expectKeychainError(.invalidParameter) { try KeychainTrustedApplication("relative/app") }
        expectKeychainError(.invalidParameter) { try KeychainTrustedApplication.program(atPath: "/no/such/program") }
    }
}
