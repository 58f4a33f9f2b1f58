import CKeychainHMAC
import Crypto

/// HMAC-SHA256 under the index key, for the blind-index columns: the key's pads are hashed once, when the keys
/// are derived, and each MAC then costs SHA-256's two final compressions and no allocation.
///
/// A find computes one MAC per searched attribute and access group, so this is on every query's path. The results
/// are HMAC-SHA256 exactly (the tests compare them with swift-crypto's `HMAC<SHA256>` and RFC 4231's vectors).
package struct IndexMAC: Sendable {
    private var key = ckeychain_hmac_key()

    /// Prepares `key`; as HMAC says, a key longer than SHA-256's 64-byte block is hashed first.
    package init(key: SymmetricKey) {
        var bytes = key.withUnsafeBytes { Array($0) }
        if bytes.count > 64 { bytes = Array(SHA256.hash(data: bytes)) }
        bytes.withUnsafeBufferPointer { pointer in
            _ = ckeychain_hmac_key_init(&self.key, pointer.baseAddress, pointer.count)
        }
        for index in bytes.indices { bytes[index] = 0 }
    }

    /// Runs `body` with a MAC started under this key; `body` adds the message with ``Message/update(_:)``.
    package func authenticationCode(_ body: (inout Message) -> Void) -> [UInt8] {
        var message = Message()
        withUnsafePointer(to: key) { key in
            ckeychain_hmac_start(key, &message.state)
        }
        body(&message)
        return finish(&message.state)
    }

    private func finish(_ state: inout ckeychain_sha256_state) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buffer, count in
            withUnsafePointer(to: key) { key in
                ckeychain_hmac_finish(key, &state, buffer.baseAddress)
            }
            count = 32
        }
    }

    /// A MAC's message being added.
    package struct Message {
        fileprivate var state = ckeychain_sha256_state()

        /// Adds bytes to the message.
        package mutating func update(_ bytes: some Sequence<UInt8>) {
            let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                ckeychain_hmac_update(&state, buffer.baseAddress, buffer.count)
            }
            if done == nil {
                let copy = Array(bytes)
                copy.withUnsafeBytes { ckeychain_hmac_update(&state, $0.baseAddress, $0.count) }
            }
        }

        /// Adds the bytes of a buffer.
        package mutating func update(_ buffer: UnsafeRawBufferPointer) {
            ckeychain_hmac_update(&state, buffer.baseAddress, buffer.count)
        }

        /// Adds a string's UTF-8 bytes.
        package mutating func update(_ string: String) {
            var string = string
            string.withUTF8 { ckeychain_hmac_update(&state, $0.baseAddress, $0.count) }
        }

        /// Adds one byte.
        package mutating func update(byte: UInt8) {
            var byte = byte
            ckeychain_hmac_update(&state, &byte, 1)
        }
    }
}
