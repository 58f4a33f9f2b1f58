import ArgumentParser
import Foundation
import KeychainKit

/// A four-character code given on the command line (`-c`, `-C`, `-r`, `-t`), as macOS's
/// `parse_fourcharcode` takes it: exactly four bytes, e.g. `"http"` or `"ftp "`.
struct FourCharCode: ExpressibleByArgument, Sendable, Hashable {
    /// The code as text (stored as a string for `ptcl` and `atyp`, as Apple's SecItem constants are).
    let text: String
    /// The 32-bit big-endian number of the four bytes (stored for `crtr` and `type`).
    let value: UInt32

    init?(argument: String) {
        guard argument.utf8.count == 4 else { return nil }
        text = argument
        value = ItemPrinter.fourCharCode(argument)
    }

    var numberValue: KeychainItem.Value { .int(Int64(value)) }
    var stringValue: KeychainItem.Value { .string(text) }
}

/// Password bytes given as hexadecimal (`-X`), parsed like macOS's `convertHex`: an odd number of digits is
/// padded with a leading zero.
struct HexData: ExpressibleByArgument, Sendable {
    let data: Data

    init?(argument: String) {
        var nibbles: [UInt8] = []
        for character in argument.utf8 {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(character - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(character - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(character - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        if nibbles.count % 2 == 1 { nibbles.insert(0, at: 0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nibbles.count / 2)
        var index = 0
        while index < nibbles.count {
            bytes.append(nibbles[index] << 4 | nibbles[index + 1])
            index += 2
        }
        data = Data(bytes)
    }
}
