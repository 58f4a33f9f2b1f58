import Crypto
import Foundation
import KeychainCore
import KeychainSSH
import KeychainTestSupport
import Testing

/// The agent protocol's messages: golden vectors fix their bytes (a format change is a decision), round trips cover
/// every request, and malformed input is refused with `corruptData`, never a crash.
struct SSHAgentMessageTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A fixed Ed25519 key (seed 0x01 × 32).
    static let ed25519: SSHPrivateKey = {
        let seed = [UInt8](repeating: 1, count: 32)
        let publicKey = (try? Curve25519.Signing.PrivateKey(rawRepresentation: seed)).map { Array($0.publicKey.rawRepresentation) } ?? []
        return .ed25519(seed: seed, publicKey: publicKey)
    }()

    @Test func goldenVectors() throws {
        // SSH_AGENTC_REQUEST_IDENTITIES, framed.
        #expect(Self.hex(SSHAgentFrame.frame(SSHAgentRequest.requestIdentities.message)) == "000000010b")
        // SSH_AGENT_FAILURE and SSH_AGENT_SUCCESS.
        #expect(Self.hex(SSHAgentResponse.failure.message) == "05")
        #expect(Self.hex(SSHAgentResponse.success.message) == "06")
        // An identities answer with one key (blob 01 02 03) and the comment "k".
        #expect(Self.hex(SSHAgentResponse.identities([SSHAgentIdentity(key: [1, 2, 3], comment: "k")]).message) == "0c0000000100000003010203000000016b")
        // A sign request for key blob aa, data bbcc, flags 4 (rsa-sha2-512).
        #expect(Self.hex(SSHAgentRequest.sign(key: [0xaa], data: [0xbb, 0xcc], flags: 4).message) == "0d00000001aa00000002bbcc00000004")
        // The Ed25519 public key blob: its type and 32 bytes.
        let blob = Self.ed25519.publicKey.blob
        #expect(Self.hex(Array(blob.prefix(19))) == "0000000b7373682d6564323535313900000020")
        #expect(blob.count == 19 + 32)
        // An RSA modulus with its top bit set gets a leading zero byte as an mpint; leading zeros are dropped.
        var writer = SSHWireWriter()
        writer.mpint(unsigned: [0x00, 0x80, 0x01])
        #expect(Self.hex(writer.bytes) == "00000003008001")
    }

    @Test func everyRequestRoundTrips() throws {
        let requests: [SSHAgentRequest] = [
            .requestIdentities,
            .sign(key: Self.ed25519.publicKey.blob, data: Array("session data".utf8), flags: 0),
            .addIdentity(Self.ed25519, comment: "laptop", constraints: []),
            .addIdentity(Self.ed25519, comment: "", constraints: [.lifetime(seconds: 600), .confirm, .restrictDestination([0, 0, 0, 0])]),
            .removeIdentity(key: Self.ed25519.publicKey.blob),
            .removeAllIdentities,
            .lock(passphrase: Array("pw".utf8)),
            .unlock(passphrase: Array("pw".utf8)),
            .sessionBind(hostKey: [1], sessionID: [2, 3], signature: [4], forwarding: true),
            .otherExtension(name: "query"),
            .unsupported(type: 20),
        ]
        for request in requests {
            #expect(try SSHAgentRequest(message: request.message) == request, "\(request)")
        }
        let responses: [SSHAgentResponse] = [.failure, .success, .identities([]), .signature([9, 9])]
        for response in responses { #expect(try SSHAgentResponse(message: response.message) == response) }
    }

    @Test func framesAreBounded() throws {
        #expect(try SSHAgentFrame.next(in: [0, 0, 0]) == nil)
        #expect(try SSHAgentFrame.next(in: [0, 0, 0, 2, 11]) == nil)
        let framed = try #require(try SSHAgentFrame.next(in: [0, 0, 0, 1, 11, 0]))
        #expect(framed.message == [11] && framed.consumed == 5)
        expectKeychainError(.corruptData) { try SSHAgentFrame.next(in: [0, 0, 0, 0]) }
        // 256 KiB + 1 is refused from the length alone, before anything else is read.
        expectKeychainError(.corruptData) { try SSHAgentFrame.next(in: [0, 4, 0, 1]) }
        #expect(try SSHAgentFrame.next(in: [0, 4, 0, 0]) == nil)
    }

    @Test func everyCutOfEveryRequestIsRefusedNotACrash() throws {
        let requests: [SSHAgentRequest] = [
            .sign(key: Self.ed25519.publicKey.blob, data: [1, 2, 3], flags: 0),
            // Without constraints: a cut at a constraint's boundary would be a valid request with fewer.
            .addIdentity(Self.ed25519, comment: "c", constraints: []),
            .sessionBind(hostKey: [1], sessionID: [2], signature: [3], forwarding: false),
        ]
        for request in requests {
            let bytes = request.message
            for cut in 1..<bytes.count {
                expectKeychainError(.corruptData, "\(request) cut at \(cut)") { try SSHAgentRequest(message: Array(bytes.prefix(cut))) }
            }
            // A byte after the fields is refused too.
            expectKeychainError(.corruptData, "\(request) with a byte more") { try SSHAgentRequest(message: bytes + [0]) }
        }
        // An Ed25519 key whose public half does not match its seed.
        var writer = SSHWireWriter()
        writer.byte(17)
        writer.string("ssh-ed25519")
        writer.string([UInt8](repeating: 7, count: 32))
        writer.string([UInt8](repeating: 1, count: 32) + [UInt8](repeating: 7, count: 32))
        writer.string("c")
        expectKeychainError(.corruptData) { try SSHAgentRequest(message: writer.bytes) }
        // An unknown key type is named as such.
        var dsa = SSHWireWriter()
        dsa.byte(17)
        dsa.string("ssh-dss")
        expectKeychainError(.unimplemented) { try SSHAgentRequest(message: dsa.bytes) }
    }

    @Test func anEd25519SignatureVerifies() throws {
        let data = Array("to be signed".utf8)
        let signature = try Self.ed25519.signature(of: data)
        #expect(Self.ed25519.publicKey.verifies(signature, of: data))
        #expect(!Self.ed25519.publicKey.verifies(signature, of: data + [0]))
    }
}
