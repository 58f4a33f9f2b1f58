import Foundation
import KeychainKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the secret of a new item comes from: a prompt on the terminal with echo off (macOS's `getpass`), asked
/// twice, when no password is given or `-w` ends the command; one line of standard input with `--password-stdin`;
/// or, for compatibility, `-w <password>` or `-X <hex>` on the command line (where other users can read it).
enum PasswordPrompt {
    /// The hint printed when there is no terminal to ask for a secret on.
    static let standardInputHint = "Give it on standard input with --password-stdin, for example: printf '%s\\n' \"$SECRET\" | security ... --password-stdin"

    /// The secret for an add command. `function` names the call in the error macOS-style messages print.
    static func secret(text: String?, hex: HexData?, fromStandardInput: Bool, function: String) throws(ToolFailure) -> Data {
        if fromStandardInput { return try StandardInputSecret.line(function: function, what: "the password") }
        if let hex { return hex.data }
        // A password given as bytes that are not UTF-8 is stored as exactly those bytes (RawArguments).
        if let text { return Data(RawArguments.bytes(of: text)) }
        return try prompt(function: function)
    }

    /// Prompts on `/dev/tty` up to three times until both entries match. Without a terminal the command fails
    /// with `errSecInteractionNotAllowed` instead of waiting, naming `--password-stdin`.
    static func prompt(function: String) throws(ToolFailure) -> Data {
        let fd = try openTerminal(function: function, detail: "There is no terminal to ask for the password on. \(standardInputHint)")
        defer { close(fd) }
        for _ in 0..<3 {
            guard let first = readLine(fd, prompt: "password data for new item: ") else { break }
            guard let second = readLine(fd, prompt: "retype password for new item: ") else { break }
            if first == second { return first }
            Output.standardError("passwords don't match\n")
        }
        throw ToolFailure(function, status: .userCanceled)
    }

    /// Asks once on `/dev/tty` with echo off (`prompt` ends in ": "), or fails with
    /// `errSecInteractionNotAllowed` when there is no terminal. `hint` says which flag gives the value instead.
    static func ask(_ prompt: String, function: String, hint: String) throws(ToolFailure) -> String {
        let fd = try openTerminal(function: function, detail: "There is no terminal to ask on. \(hint)")
        defer { close(fd) }
        guard let line = readLine(fd, prompt: prompt) else { throw ToolFailure(function, status: .userCanceled) }
        return String(decoding: line, as: UTF8.self)
    }

    /// The controlling terminal (never a pipe), or `errSecInteractionNotAllowed` at once when there is none.
    private static func openTerminal(function: String, detail: String) throws(ToolFailure) -> Int32 {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw ToolFailure(function, status: .interactionNotAllowed, detail: detail) }
        return fd
    }

    /// Writes `prompt`, reads one line with echo off and restores the terminal. Nil at end of input.
    private static func readLine(_ fd: Int32, prompt: String) -> Data? {
        var saved = termios()
        let isTerminal = tcgetattr(fd, &saved) == 0
        if isTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(fd, TCSADRAIN, &quiet)
        }
        defer {
            if isTerminal {
                _ = tcsetattr(fd, TCSADRAIN, &saved)
                writeText(fd, "\n")
            }
        }
        writeText(fd, prompt)
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return line.isEmpty ? nil : Data(line) }
            if byte == UInt8(ascii: "\n") { return Data(line) }
            line.append(byte)
        }
    }

    private static func writeText(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}
