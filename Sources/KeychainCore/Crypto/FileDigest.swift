import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The SHA-256 of a program file, in lowercase hex: how keychaind recognises a registered executable, and what
/// `security app add` records for it.
package enum FileDigest {
    /// The hex SHA-256 of the file at `path`.
    package static func sha256Hex(ofFileAt path: String) throws(KeychainError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw KeychainError(code: .missingEntitlement, message: "Cannot read the program \(path) to identify it (\(String(cString: strerror(errno)))).")
        }
        defer { close(fd) }
        return try sha256Hex(of: fd, path: path)
    }

    /// The hex SHA-256 of everything readable from `fd` (`path` names it in errors).
    package static func sha256Hex(of fd: Int32, path: String) throws(KeychainError) -> String {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw FileSystem.ioError("read", path) }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return hex(hasher.finalize())
    }

    /// Lowercase hex of `bytes`.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
