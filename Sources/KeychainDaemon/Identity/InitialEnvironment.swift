import CKeychainLinux
import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// The environment a process started with, read from its memory, for when its `/proc/PID/environ` cannot be
/// opened: the system keychaind (`keychaind --system`) runs as its own user, and the kernel keeps another user's
/// `environ` file to that user (mode 0400), whatever the reader's capabilities short of reading every file on the
/// system. With CAP_SYS_PTRACE, the one capability keychaind-system.service gives it, keychaind may read the same
/// bytes where the kernel reads them for `environ`: the range `env_start`…`env_end` (fields 50 and 51 of
/// `/proc/PID/stat`, shown only to a reader that may ptrace the process) in the process's memory
/// (`process_vm_readv`).
enum InitialEnvironment {
    /// The most bytes read (the kernel's own limit for arguments and environment together is lower).
    static let limit = 8 << 20

    /// The `NAME=value` entries, separated by NUL bytes, of the process at `base` (`/proc/PID`), or nil when they
    /// cannot be read.
    static func read(base: String, pid: Int32) -> Data? {
        guard let stat = try? FileSystem.read("\(base)/stat"), let range = environmentRange(stat) else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(range.end - range.start))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let buffer = raw.baseAddress else { return -1 }
                return ckeychain_read_process_memory(pid, range.start + UInt(done), buffer + done, UInt(raw.count - done))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return Data(bytes)
    }

    /// `env_start` and `env_end` from the text of `/proc/PID/stat`; nil when they are hidden (0) or out of bounds.
    static func environmentRange(_ stat: Data) -> (start: UInt, end: UInt)? {
        // The command name (field 2) is in parentheses and may hold spaces and parentheses: fields start after
        // the last ')'.
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: UInt8(ascii: " "))
        // fields[0] is field 3 (state); env_start is field 50, env_end field 51 (proc(5)).
        guard fields.count > 48,
            let start = UInt(String(decoding: fields[47], as: UTF8.self)),
            let end = UInt(String(decoding: fields[48].prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)),
            start != 0, end >= start, end - start <= UInt(limit)
        else { return nil }
        return (start, end)
    }
}
