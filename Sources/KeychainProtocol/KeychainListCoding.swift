import Foundation
import KeychainCore

// The requests and answer about a user's keychains (tags 60–64, answer 60), in the encodings of WireCoding.swift:
//
//   name:     string (1–64 bytes of A–Z a–z 0–9 . _ -, not starting with a dot; checked on reading)
//   names:    u32 count (at most 64) | name…
//   60 on keychains:    names | request (any but another 60)
//   61 list keychains
//   62 create keychain: name | optional string passcode
//   63 delete keychain: name
//   64 set search list: optional names | optional name (the default)
//   answer 60: u32 count (at most 1,024) | summary… | names (the search list) | name (the default)
//   summary:  name | string path | optional lock state | u8 read-only (0 or 1)

extension BinaryWriter {
    mutating func keychainName(_ name: KeychainName) { string(name.rawValue) }

    mutating func keychainNames(_ names: [KeychainName]) {
        u32(UInt32(names.count))
        for name in names { keychainName(name) }
    }

    mutating func keychainListing(_ listing: KeychainListing) {
        u32(UInt32(listing.keychains.count))
        for summary in listing.keychains {
            keychainName(summary.name)
            string(summary.path)
            optional(summary.lockState) { $0.lockState($1) }
            bool(summary.isReadOnly)
        }
        keychainNames(listing.searchList)
        keychainName(listing.defaultKeychain)
    }
}

/// The most keychains one listing may describe.
private let maximumListedKeychains = 1024

extension BinaryReader {
    mutating func keychainName() throws(KeychainError) -> KeychainName {
        let raw = try string()
        guard raw.utf8.count <= KeychainName.maximumLength, let name = try? KeychainName(raw), name.rawValue == raw else {
            throw malformedMessage
        }
        return name
    }

    mutating func keychainNames() throws(KeychainError) -> [KeychainName] {
        let n = try count(minimumSize: 5)
        guard n <= KeychainSearchList.maximumCount else { throw malformedMessage }
        var names: [KeychainName] = []
        for _ in 0..<n { names.append(try keychainName()) }
        return names
    }

    mutating func keychainListing() throws(KeychainError) -> KeychainListing {
        let n = try count(minimumSize: 11)
        guard n <= maximumListedKeychains else { throw malformedMessage }
        var summaries: [KeychainSummary] = []
        for _ in 0..<n {
            let name = try keychainName()
            let path = try string()
            let lockState = try optional { (r) throws(KeychainError) in try r.lockState() }
            summaries.append(KeychainSummary(name: name, path: path, lockState: lockState, isReadOnly: try bool()))
        }
        return KeychainListing(keychains: summaries, searchList: try keychainNames(), defaultKeychain: try keychainName())
    }
}
