import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The terminal a process runs in, from the kernel (`tty_nr` in `/proc/PID/stat`): where keychaind's pinentry asks
/// the person at that terminal when there is no display.
package enum PeerTerminal {
    /// The device path of the controlling terminal of process `pid` (`/dev/pts/N`, `/dev/ttyN`), when it has one and
    /// the device node there is that terminal; nil otherwise.
    package static func path(of pid: Int32, proc: String = "/proc") -> String? {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: "\(proc)/\(pid)/stat")), data.count < 4096,
            let text = String(data: data, encoding: .utf8), let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state, ppid, pgrp, session, tty_nr.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 4, let number = UInt32(fields[4]), number != 0 else { return nil }
        let major = (number >> 8) & 0xfff
        let minor = (number & 0xff) | ((number >> 12) & 0xfff00)
        let path: String
        switch major {
        case 136...143: path = "/dev/pts/\((major - 136) * 256 + minor)"
        case 4 where minor < 64: path = "/dev/tty\(minor)"
        default: return nil
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, UInt32(truncatingIfNeeded: info.st_rdev) == number else { return nil }
        return path
    }
}
