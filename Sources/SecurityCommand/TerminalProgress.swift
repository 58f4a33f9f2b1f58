import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One line of progress on standard error, rewritten in place, when standard error is a terminal (and nothing when
/// it is not, so that scripts and logs see only the result).
final class TerminalProgress: Sendable {
    /// Whether standard error is a terminal.
    let isTerminal = isatty(STDERR_FILENO) == 1

    /// Shows `text` in place of the previous line.
    func show(_ text: String) {
        guard isTerminal else { return }
        Output.standardError("\r\u{1B}[K\(text)")
    }

    /// Clears the line.
    func clear() {
        guard isTerminal else { return }
        Output.standardError("\r\u{1B}[K")
    }

    /// `bytes` for a person: 512 B, 1.5 KiB, 12.0 MiB.
    static func size(_ bytes: Int) -> String {
        let units = ["KiB", "MiB", "GiB"]
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }
}
