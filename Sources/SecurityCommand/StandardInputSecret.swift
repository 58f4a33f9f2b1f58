import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Secrets given on standard input (`--password-stdin` and its kin), for scripts: a secret on the command line
/// is readable by every user in `/proc/PID/cmdline`, one on standard input is not.
///
/// Each secret is one line; only its trailing newline (`\n`) is removed, so spaces and a `\r` stay part of it.
/// Bytes are read one at a time, so a verb that takes two secrets (`set-keychain-password`) reads exactly its
/// two lines and leaves the rest of the input alone.
enum StandardInputSecret {
    /// The longest secret accepted (keychaind's frames are at most 16 MiB).
    static let maximumLength = 1 << 20

    /// The next line of standard input as bytes. `what` names the secret in the error when input ends first.
    static func line(function: String, what: String) throws(ToolFailure) -> Data {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                throw ToolFailure(function, status: .io, detail: "Standard input could not be read (errno \(errno)) while reading \(what).")
            }
            if n == 0 {
                guard !line.isEmpty else {
                    throw ToolFailure(
                        function, status: .param, detail: "Standard input ended before \(what). Give it as one line on standard input, for example: printf '%s\\n' \"$SECRET\" | security ...")
                }
                return Data(line)
            }
            if byte == UInt8(ascii: "\n") { return Data(line) }
            guard line.count < maximumLength else {
                throw ToolFailure(function, status: .param, detail: "The line on standard input holding \(what) is longer than \(maximumLength) bytes.")
            }
            line.append(byte)
        }
    }

    /// The next line of standard input as text (passcodes and passphrases are UTF-8).
    static func text(function: String, what: String) throws(ToolFailure) -> String {
        let bytes = try line(function: function, what: what)
        guard let text = String(data: bytes, encoding: .utf8) else {
            throw ToolFailure(function, status: .param, detail: "\(what.prefix(1).uppercased() + what.dropFirst()) on standard input is not UTF-8 text.")
        }
        return text
    }
}
