import Foundation
import KeychainCore
import Testing
@testable import KeychainProtocol

/// The requests about a user's keychains (tags 60–64) and their answer (tag 60), fixed by golden bytes like the
/// other messages; names are checked on reading, and a request for some keychains cannot hold another.
@Suite struct KeychainListMessageTests {
    static func name(_ raw: String) throws -> KeychainName { try KeychainName(raw) }

    static func requests() throws -> [(Frame, String)] {
        return [
            (Frame(id: 1, body: .request(.onKeychains([try name("work"), .login], .lock))), "0000001d0301000000013c0000000200000004776f726b000000056c6f67696e0b"),
            (Frame(id: 2, body: .request(.listKeychains)), "000000070301000000023d"),
            (Frame(id: 3, body: .request(.createKeychain(try name("work"), passcode: "pw"))), "000000160301000000033e00000004776f726b01000000027077"),
            (Frame(id: 4, body: .request(.deleteKeychain(try name("work")))), "0000000f0301000000043f00000004776f726b"),
            (Frame(id: 5, body: .request(.setSearchList([try name("work")], defaultKeychain: nil))), "0000001503010000000540010000000100000004776f726b00"),
        ]
    }

    static func listing() throws -> KeychainListing {
        KeychainListing(
            keychains: [
                KeychainSummary(name: .login, path: "/k", lockState: .unlocked, isReadOnly: false),
                KeychainSummary(name: .systemRoots, path: "/r", lockState: nil, isReadOnly: true),
            ],
            searchList: [.login], defaultKeychain: .login)
    }

    static let goldenListing = "0000004a0302000000063c00000002000000056c6f67696e000000022f6b0102000000000b53797374656d526f6f7473000000022f72000100000001000000056c6f67696e000000056c6f67696e"

    @Test func requestsEncodeToTheirGoldenBytes() throws {
        for (frame, golden) in try Self.requests() {
            #expect(FrameGoldenTests.hex(frame.encoded) == golden)
            let decoded = try Frame.decode(body: FrameGoldenTests.unhex(golden).dropFirst(4))
            guard case .request(let request) = decoded.body, case .request(let original) = frame.body else {
                Issue.record("not a request")
                continue
            }
            #expect(request == original)
        }
    }

    @Test func theListingEncodesToItsGoldenBytes() throws {
        let frame = Frame(id: 6, body: .response(.keychains(try Self.listing())))
        #expect(FrameGoldenTests.hex(frame.encoded) == Self.goldenListing)
        let decoded = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenListing).dropFirst(4))
        guard case .response(.keychains(let listing)) = decoded.body else {
            Issue.record("not a listing")
            return
        }
        #expect(listing == (try Self.listing()))
    }

    @Test func aRequestForSomeKeychainsCannotHoldAnother() throws {
        // 60 [work] 60 [work] lock: refused before the inner wrapper is decoded, so nesting cannot recurse.
        let nested = Frame(id: 7, body: .request(.onKeychains([try Self.name("work")], .lock)))
        var bytes = Array(nested.encoded)
        let at = try #require(bytes.firstIndex(of: 0x0b))
        bytes.replaceSubrange(at..<at + 1, with: [60, 0, 0, 0, 1, 0, 0, 0, 4] + Array("work".utf8) + [0x0b])
        #expect { try Frame.decode(body: bytes.dropFirst(4)) } throws: { ($0 as? KeychainError)?.status == .decode }
    }

    @Test func aNameThatIsNotAKeychainNameIsRefused() throws {
        for bad in ["../x", "", ".hidden", String(repeating: "a", count: 65), "a/b", "work.keychain"] {
            var w = BinaryWriter()
            w.u8(63)
            w.string(bad)
            var bytes: [UInt8] = [3, 1, 0, 0, 0, 9]
            bytes += w.bytes
            #expect(throws: KeychainError.self, "\(bad)") { try Frame.decode(body: bytes[...]) }
        }
    }
}
