import Foundation
import KeychainTestSupport
import Testing
@testable import KeychainCore

@Suite struct PlistCodingTests {
    static let sample: PlistValue = .dictionary([
        "class": .string("genp"), "acct": .string("alice"), "v_Data": .data(Data([0, 1, 2])), "r_Data": .bool(true),
        "port": .int(-443), "ratio": .double(1.5), "cdat": .date(Date(timeIntervalSinceReferenceDate: 1_000_000)),
        "list": .array([.int(1), .string("two")]), "odd": .unsupported("SecAccessControl"),
    ])

    @Test func roundTripAndGoldenBytes() throws {
        let bytes = PlistCoding.encode(Self.sample)
        #expect(try PlistCoding.decode(bytes) == Self.sample)
        #expect(hex(bytes) == Golden.plistV1)
    }

    @Test func equalDictionariesEncodeEqually() {
        let a: PlistValue = .dictionary(["b": .int(1), "a": .int(2)])
        let b: PlistValue = .dictionary(["a": .int(2), "b": .int(1)])
        #expect(PlistCoding.encode(a) == PlistCoding.encode(b))
    }

    @Test func everyTruncationAndEveryFlippedByteFailsCleanly() {
        let bytes = PlistCoding.encode(Self.sample)
        for length in 0..<bytes.count {
            expectKeychainError(.corruptData) { try PlistCoding.decode(bytes.prefix(length)) }
        }
        // Flipping bytes may still give a valid value; otherwise the failure is errSecDecode's, never a trap.
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0xFF
            do {
                _ = try PlistCoding.decode(damaged)
            } catch {
                #expect(error.code == .corruptData, "byte \(index)")
            }
        }
    }

    @Test func hostileCountsAndDepthAreRefused() {
        // An array claiming 4 billion elements in 5 bytes.
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x07, 0xFF, 0xFF, 0xFF, 0xFF]) }
        // A dictionary claiming a million entries.
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x08, 0x00, 0x0F, 0x42, 0x40]) }
        // Nesting 10,000 arrays deep.
        var deep: [UInt8] = []
        for _ in 0..<10_000 { deep += [0x07, 0, 0, 0, 1] }
        deep += [0x03, 1]
        expectKeychainError(.corruptData) { try PlistCoding.decode(deep) }
        // Duplicate keys, invalid UTF-8, unknown tags, trailing bytes.
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x08, 0, 0, 0, 2, 0, 0, 0, 1, 0x61, 0x03, 1, 0, 0, 0, 1, 0x61, 0x03, 0]) }
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x01, 0, 0, 0, 1, 0xFF]) }
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x42]) }
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x03, 1, 0]) }
        expectKeychainError(.corruptData) { try PlistCoding.decode([0x03, 2]) }
    }
}
