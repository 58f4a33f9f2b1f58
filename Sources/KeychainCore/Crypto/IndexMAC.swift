import Crypto

/// HMAC-SHA256 under the index key, for the blind-index columns, with both of the key's pads hashed once, when
/// the keys are derived: each MAC starts from copies of the two SHA-256 states, so it costs the message's and
/// the outer hash's compressions and nothing more.
///
/// swift-crypto's `HMAC<SHA256>` keeps the inner state but hashes the outer pad again in every `finalize()`; a
/// find computes one MAC per searched attribute, so this is on every query's path. The results are HMAC-SHA256
/// exactly (the tests compare them with `HMAC<SHA256>` and RFC 4231's vectors).
package struct IndexMAC: Sendable {
    private let inner: SHA256
    private let outer: SHA256

    /// Prepares `key`; as HMAC says, a key longer than SHA-256's 64-byte block is hashed first.
    package init(key: SymmetricKey) {
        var bytes = key.withUnsafeBytes { Array($0) }
        if bytes.count > 64 { bytes = Array(SHA256.hash(data: bytes)) }
        bytes += [UInt8](repeating: 0, count: 64 - bytes.count)
        var inner = SHA256()
        inner.update(data: bytes.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(data: bytes.map { $0 ^ 0x5c })
        for index in bytes.indices { bytes[index] = 0 }
        self.inner = inner
        self.outer = outer
    }

    /// Runs `body` with a MAC started under this key; `body` adds the message with ``Message/update(_:)``.
    package func authenticationCode(_ body: (inout Message) -> Void) -> [UInt8] {
        var message = Message(state: inner)
        body(&message)
        let innerDigest = message.state.finalize()
        var outer = outer
        innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize().withUnsafeBytes { Array($0) }
    }

    /// A MAC's message being added.
    package struct Message {
        fileprivate var state: SHA256

        /// Adds the bytes of a buffer.
        package mutating func update(_ buffer: UnsafeRawBufferPointer) {
            state.update(bufferPointer: buffer)
        }

        /// Adds bytes to the message.
        package mutating func update(_ bytes: some Sequence<UInt8>) {
            let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                state.update(bufferPointer: UnsafeRawBufferPointer(buffer))
            }
            if done == nil { state.update(data: Array(bytes)) }
        }

        /// Adds a string's UTF-8 bytes.
        package mutating func update(_ string: String) {
            var string = string
            string.withUTF8 { state.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }

        /// Adds one byte.
        package mutating func update(byte: UInt8) {
            withUnsafeBytes(of: byte) { state.update(bufferPointer: $0) }
        }
    }
}
