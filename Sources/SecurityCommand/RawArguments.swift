import Foundation
import KeychainKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The command line as the kernel gave it: bytes, not text.
///
/// `CommandLine.arguments` decodes argv with U+FFFD repair, so `-a $'\xff'` and `-a $'\xfe'` would both become
/// the account `"\u{FFFD}"` and name the same item. Instead, every byte of an argument that is not part of valid
/// UTF-8 is carried through parsing as a private escape scalar (U+10FF00 plus the byte), which ArgumentParser
/// passes on untouched; the flags that name an item (account, service, label, …) and the password turn such a
/// value back into its exact bytes (``value(_:)``, ``bytes(of:)``), stored as a Data-valued attribute as Apple's
/// `CFData` names are. Valid UTF-8 arguments are passed on exactly as before.
///
/// Nothing is ever silently repaired: a verb that cannot carry bytes refuses such an argument with errSecParam
/// (``commandLine()``), and so does a password verb whose bytes reach a flag that takes only text
/// (``requireCarried(_:function:)``).
enum RawArguments {
    /// The verbs whose name flags and password may be bytes.
    static let byteVerbs: Set<String> = [
        "add-generic-password", "find-generic-password", "delete-generic-password",
        "add-internet-password", "find-internet-password", "delete-internet-password",
    ]

    /// The flags that may carry bytes, for the messages.
    static let byteFlags = "-a, -s, -l, -j, -D and -G (internet passwords also -d and -p) and the password -w"

    /// The escape scalars: U+10FF00 plus the byte (only 0x80…0xFF occur, as ASCII is always valid UTF-8).
    static let escapeBase: UInt32 = 0x10FF00

    /// The command line after the program name, as text for parsing, with what was escaped.
    struct Escaped: Sendable, Equatable {
        /// Every argument: its own text when it is UTF-8, else its text with escape scalars.
        var arguments: [String]
        /// The indices (in ``arguments``) of the arguments that were not UTF-8.
        var invalid: [Int]
        /// How many bytes were escaped in all.
        var escapeCount: Int
        /// The index of a UTF-8 argument that itself holds escape scalars, which could not be told apart from
        /// escaped bytes (then nothing may be escaped).
        var ambiguous: Int?
    }

    /// The process's own command line, read once.
    static let current = escape(processArguments())

    /// The raw bytes of argv[1...].
    static func processArguments() -> [[UInt8]] {
        let count = Int(CommandLine.argc)
        guard count > 1 else { return [] }
        let argv = CommandLine.unsafeArgv
        return (1..<count).map { index in
            guard let pointer = argv[index] else { return [] }
            return Array(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
                    count: strlen(pointer)))
        }
    }

    /// Escapes each argument that is not valid UTF-8.
    static func escape(_ raw: [[UInt8]]) -> Escaped {
        var result = Escaped(arguments: [], invalid: [], escapeCount: 0, ambiguous: nil)
        for (index, bytes) in raw.enumerated() {
            if let text = String(validating: bytes, as: UTF8.self) {
                if result.ambiguous == nil, text.unicodeScalars.contains(where: isEscape) { result.ambiguous = index }
                result.arguments.append(text)
            } else {
                let (text, count) = escapedText(bytes)
                result.arguments.append(text)
                result.invalid.append(index)
                result.escapeCount += count
            }
        }
        return result
    }

    /// `bytes` as text: valid UTF-8 sequences as their characters, every other byte as its escape scalar.
    static func escapedText(_ bytes: [UInt8]) -> (text: String, escaped: Int) {
        var scalars = String.UnicodeScalarView()
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        var escaped = 0
        decoding: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                scalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<min(offset + length, bytes.count)] {
                    scalars.append(Unicode.Scalar(escapeBase + UInt32(byte)) ?? "\u{FFFD}")
                }
                offset += length
                escaped += length
            case .emptyInput:
                break decoding
            }
        }
        return (String(scalars), escaped)
    }

    /// Whether `scalar` is an escape scalar.
    static func isEscape(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= escapeBase }

    /// The exact bytes a parsed value stands for: escaped bytes as themselves, the rest as UTF-8.
    static func bytes(of text: String, escaping: Bool = current.escapeCount > 0) -> [UInt8] {
        guard escaping, text.unicodeScalars.contains(where: isEscape) else { return Array(text.utf8) }
        var out: [UInt8] = []
        for scalar in text.unicodeScalars {
            if isEscape(scalar) {
                out.append(UInt8(truncatingIfNeeded: scalar.value - escapeBase))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// The attribute a name flag's value stores: the text itself when it was UTF-8 (a String attribute, as
    /// always), else its exact bytes (a Data attribute, which matches only those bytes).
    static func value(_ text: String, escaping: Bool = current.escapeCount > 0) -> KeychainItem.Value {
        guard escaping, text.unicodeScalars.contains(where: isEscape) else { return .string(text) }
        return .data(Data(bytes(of: text, escaping: true)))
    }

    /// How many escaped bytes `text` holds.
    static func escapeCount(_ text: String) -> Int { text.unicodeScalars.count(where: isEscape) }

    /// The arguments to parse. A command line that cannot be carried exactly is refused here with errSecParam
    /// (the message on standard error, exit status 206): bytes that are not UTF-8 given to a verb other than
    /// the password verbs, or a UTF-8 argument holding the escape scalars themselves beside such bytes.
    static func commandLine(_ escaped: Escaped = current) -> [String] {
        if let failure = refusal(escaped) {
            Output.standardError(failure.text)
            Foundation.exit(failure.exitCode)
        }
        return escaped.arguments
    }

    /// Why `escaped` cannot be parsed, or nil when it can.
    static func refusal(_ escaped: Escaped) -> ToolFailure? {
        guard let first = escaped.invalid.first else { return nil }
        let verb = escaped.arguments.first ?? ""
        if !byteVerbs.contains(verb) {
            guard first > 0 else {
                return ToolFailure(
                    "command line", status: .param,
                    detail: "The command (argument 1) is not UTF-8 text. Run `security help` for the commands.")
            }
            return ToolFailure(
                verb, status: .param,
                detail:
                    "Argument \(first + 1) (counting the command as 1) is not UTF-8 text, and \(verb) keeps only text. Give it UTF-8 text: only the password commands keep such bytes exactly (in \(byteFlags))."
            )
        }
        if let ambiguous = escaped.ambiguous {
            return ToolFailure(
                verb, status: .param,
                detail:
                    "Argument \(ambiguous + 1) (counting the command as 1) holds characters U+10FF00…U+10FFFF, which cannot be told apart from the bytes that are not UTF-8 in another argument. Give the two in separate commands."
            )
        }
        return nil
    }

    /// Fails with errSecParam unless the escaped bytes of the command line all reached `values` (the verb's
    /// name flags and password, each given once): a byte given to a flag that takes only text (a keychain,
    /// an access group, a trusted application), or to a flag given twice, is never silently changed.
    static func requireCarried(_ values: [String?], function: String, escaped: Escaped = current) throws(ToolFailure) {
        guard escaped.escapeCount > 0 else { return }
        let carried = values.reduce(0) { $0 + ($1.map(escapeCount) ?? 0) }
        guard carried != escaped.escapeCount else { return }
        throw ToolFailure(
            function, status: .param,
            detail: "An argument that is not UTF-8 text was given to a flag that takes only text, or a flag was given twice. Give such bytes only to \(byteFlags), each once.")
    }
}
