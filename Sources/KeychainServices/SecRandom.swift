#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)
import Foundation

// SecRandom.h: cryptographically secure random bytes.

/// A random number generator (`SecRandomRef`); there is one, the system's.
public typealias SecRandomRef = OpaquePointer

/// The default random number generator: the kernel's CSPRNG. A pointer that is never read, as Apple's is a value
/// to pass and nothing more (non-optional, as Apple declares it).
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef = OpaquePointer(Unmanaged.passUnretained(DefaultRandomSource.shared).toOpaque())

/// What `kSecRandomDefault` points at: an object alive for the whole process, so the pointer is never dangling.
final class DefaultRandomSource: Sendable {
    static let shared = DefaultRandomSource()
}

/// Fills `bytes` with `count` cryptographically secure random bytes from the kernel (Swift's
/// `SystemRandomNumberGenerator`, which reads `getrandom(2)`). Returns `errSecSuccess`, or `errSecParam` for a
/// negative count.
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard count >= 0 else { return errSecParam }
    var generator = SystemRandomNumberGenerator()
    var offset = 0
    while offset < count {
        let word = generator.next()
        let n = min(MemoryLayout<UInt64>.size, count - offset)
        withUnsafeBytes(of: word) { raw in
            UnsafeMutableRawBufferPointer(start: bytes + offset, count: n).copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[0..<n]))
        }
        offset += n
    }
    return errSecSuccess
}
#endif
