import Foundation

/// GnuPG's Assuan protocol as pinentry speaks it on its standard input and output: one command or response per
/// line, ended by LF, at most ``maximumLineLength`` bytes including the LF.
///
/// Parameters travel percent-escaped (``escape(_:)``): pinentry turns every `%XX` of a `SET…` parameter back into
/// the byte `0xXX`, so text with `%`, CR or LF in it (an item's label, a program's path) is shown as it is and can
/// never end a command early or start another. Data lines (`D`) come back percent-escaped the same way
/// (``unescape(_:)``).
package enum Assuan {
    /// Assuan's limit on one line, the LF included (`ASSUAN_LINELENGTH`, 1000 bytes). A longer line from the
    /// pinentry is a protocol error; a command is never made longer (``command(_:_:)`` shortens its text instead).
    package static let maximumLineLength = 1000

    /// The most data (after unescaping) one answer may carry across its `D` lines: 8 KiB, four times the 2048
    /// characters every pinentry accepts in its entry field. More is a protocol error, so a pinentry that floods
    /// the connection costs at most this much memory.
    package static let maximumDataLength = 8192

    /// Escapes `text` for a command parameter: `%` becomes `%25`, every byte below 0x20 (CR, LF, TAB and the other
    /// control characters) becomes `%XX` in upper-case hex, and so does DEL (0x7F) and a space at the very start
    /// (Assuan skips the blanks between a command and its parameter, so a leading space would be lost). Every other
    /// byte, UTF-8 sequences included, goes as it is.
    package static func escape(_ text: String) -> String {
        escape(bytes: Array(text.utf8))
    }

    /// ``escape(_:)`` on bytes; the result is ASCII apart from the UTF-8 sequences passed through.
    package static func escape(bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for (index, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: "%") || byte < 0x20 || byte == 0x7F || (index == 0 && byte == UInt8(ascii: " ")) {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Reverses percent-escaping: every `%XX` (two hex digits, either case) becomes the byte `0xXX`. A `%` not
    /// followed by two hex digits is an error, not passed through, so a corrupt answer is never taken as a secret.
    package static func unescape(_ bytes: some Collection<UInt8>) throws(AssuanError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw .malformed("a `%` in a data line is not followed by two hex digits")
            }
            out.append(high << 4 | low)
        }
        return out
    }

    /// One command line (without its LF): `verb`, then, when there is one, a space and `parameter` escaped. The
    /// parameter is shortened (at a character boundary, with "…" appended) so that the line with its LF fits in
    /// ``maximumLineLength``.
    package static func command(_ verb: String, _ parameter: String? = nil) -> String {
        guard let parameter else { return verb }
        let room = maximumLineLength - 1 - verb.utf8.count - 1
        let escaped = escape(parameter)
        if escaped.utf8.count <= room { return verb + " " + escaped }
        // Drop characters from the end until the escaped text and an ellipsis (3 bytes) fit.
        var kept = Substring(parameter)
        var length = escaped.utf8.count
        while !kept.isEmpty, length + 3 > room {
            let last = kept.removeLast()
            length -= escape(String(last)).utf8.count
        }
        // Escaping a shorter prefix never costs more than its share of the whole (only the first byte is special).
        let shortened = escape(String(kept)) + "…"
        return verb + " " + (shortened.utf8.count <= room ? shortened : "…")
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a conversation with a pinentry failed.
package enum AssuanError: Error, Equatable, CustomStringConvertible {
    /// A line longer than ``Assuan/maximumLineLength``.
    case lineTooLong
    /// More data than ``Assuan/maximumDataLength`` in one answer.
    case dataTooLong
    /// A line that is not an Assuan response; the string says what was wrong (never the line itself, which may
    /// hold a secret).
    case malformed(String)
    /// The pinentry closed its end (it exited, or was closed by the person).
    case closed
    /// The deadline passed before the line was complete.
    case timedOut
    /// A system call failed with this errno.
    case system(String, Int32)

    /// What went wrong, in words (never the bytes received).
    package var description: String {
        switch self {
        case .lineTooLong: "a line longer than Assuan's \(Assuan.maximumLineLength)-byte limit"
        case .dataTooLong: "more than \(Assuan.maximumDataLength) bytes of data in one answer"
        case .malformed(let why): "a malformed response (\(why))"
        case .closed: "the connection was closed"
        case .timedOut: "no answer in time"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// One line a pinentry (an Assuan server) sends.
package enum AssuanResponse: Equatable, Sendable {
    /// `OK [text]`: the command succeeded (also the greeting).
    case ok(String)
    /// `ERR code [text]`: the command failed with a gpg-error code (source in the top byte, code in the low 16 bits).
    case error(code: UInt32, text: String)
    /// `D data`: data, already unescaped. May hold a secret: never logged or described.
    case data([UInt8])
    /// `S keyword [text]`: a status line.
    case status(keyword: String, text: String)
    /// `# text`: a comment (or an empty line), ignored.
    case comment
    /// `INQUIRE keyword [parameters]`: the server asks the client for data.
    case inquire(keyword: String, parameters: String)

    /// Whether the line only informs (a status or comment line), answering nothing.
    package var isInformational: Bool {
        switch self {
        case .status, .comment: true
        default: false
        }
    }

    /// Parses one line, without its LF (a CR before the LF is not removed: Assuan lines end with LF alone).
    package static func parse(_ line: some Collection<UInt8>) throws(AssuanError) -> AssuanResponse {
        let bytes = Array(line)
        guard bytes.count < Assuan.maximumLineLength else { throw .lineTooLong }
        if bytes.isEmpty || bytes[0] == UInt8(ascii: "#") { return .comment }
        let (word, rest) = split(bytes)
        switch word {
        case "OK":
            return .ok(text(rest))
        case "ERR":
            let (number, message) = split(rest)
            guard let code = UInt32(number) else { throw .malformed("ERR without a numeric code") }
            return .error(code: code, text: text(message))
        case "D":
            return .data(try Assuan.unescape(rest))
        case "S":
            let (keyword, message) = split(rest)
            guard !keyword.isEmpty else { throw .malformed("a status line without a keyword") }
            return .status(keyword: keyword, text: text(message))
        case "INQUIRE":
            let (keyword, parameters) = split(rest)
            guard !keyword.isEmpty else { throw .malformed("INQUIRE without a keyword") }
            return .inquire(keyword: keyword, parameters: text(parameters))
        default:
            throw .malformed("an unknown response kind")
        }
    }

    /// The first word (up to a space) as text, and the bytes after the space.
    private static func split(_ bytes: some Collection<UInt8>) -> (String, ArraySlice<UInt8>) {
        let array = ArraySlice(bytes)
        guard let space = array.firstIndex(of: UInt8(ascii: " ")) else { return (text(array), []) }
        return (text(array[..<space]), array[(space + 1)...])
    }

    /// Bytes as text, invalid UTF-8 replaced.
    private static func text(_ bytes: some Collection<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}

/// gpg-error codes a pinentry answers with, and how they are built: `source << 24 | code`.
package enum GPGError {
    /// `GPG_ERR_SOURCE_PINENTRY`.
    package static let sourcePinentry: UInt32 = 5
    /// `GPG_ERR_TIMEOUT`: pinentry's own timeout (`SETTIMEOUT`) passed.
    package static let timeout: UInt32 = 62
    /// `GPG_ERR_CANCELED`: the cancel button, Escape, or the window closed (`ERR 83886179` from pinentry).
    package static let canceled: UInt32 = 99
    /// `GPG_ERR_NOT_CONFIRMED`: the not-ok button of `CONFIRM` (`ERR 83886194` from pinentry).
    package static let notConfirmed: UInt32 = 114

    /// The code alone (the low 16 bits), whatever the source.
    package static func code(_ value: UInt32) -> UInt32 { value & 0xFFFF }
}

/// Reads lines from a descriptor under a deadline, holding at most one line's limit plus one read's worth of bytes.
package struct AssuanLineReader {
    private let fd: Int32
    private var pending: [UInt8] = []
    /// The most read at once.
    private static let chunk = 1024

    /// A reader of `fd` (which it does not own or close).
    package init(fd: Int32) { self.fd = fd }

    /// The next line without its LF. Fails with ``AssuanError/lineTooLong`` as soon as more than
    /// ``Assuan/maximumLineLength`` bytes arrive without an LF, ``AssuanError/closed`` at end of stream, and
    /// ``AssuanError/timedOut`` when `deadline` passes first.
    package mutating func nextLine(deadline: ContinuousClock.Instant) throws(AssuanError) -> [UInt8] {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                guard newline < Assuan.maximumLineLength else { throw .lineTooLong }
                let line = Array(pending[..<newline])
                wipe(upTo: newline + 1)
                return line
            }
            guard pending.count < Assuan.maximumLineLength else { throw .lineTooLong }
            try waitReadable(deadline: deadline)
            var buffer = [UInt8](repeating: 0, count: Self.chunk)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { throw .closed }
            if count < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                if code == ECONNRESET { throw .closed }
                throw .system("recv", code)
            }
            pending.append(contentsOf: buffer[..<count])
            for index in 0..<count { buffer[index] = 0 }
        }
    }

    /// Overwrites and drops the first `count` pending bytes (they may have held a secret).
    private mutating func wipe(upTo count: Int) {
        for index in 0..<count { pending[index] = 0 }
        pending.removeFirst(count)
    }

    /// Overwrites whatever is still pending.
    package mutating func clear() { wipe(upTo: pending.count) }

    private func waitReadable(deadline: ContinuousClock.Instant) throws(AssuanError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timedOut }
            let milliseconds = Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready > 0 { return }  // readable, hung up or in error: recv says which
            if ready < 0, errno != EINTR { throw .system("poll", errno) }
        }
    }
}
