import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port nothing listens on now: bound on 127.0.0.1, read back, closed. For a server to take next
/// or an address that must refuse connections.
public func unusedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestProcessError("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw TestProcessError("bind: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
