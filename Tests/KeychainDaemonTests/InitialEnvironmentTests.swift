import Foundation
import Testing
@testable import KeychainDaemon

/// The system keychaind reads another user's loader variables from the process's memory: the range must come from
/// the right fields of /proc/PID/stat, and the bytes must be those the kernel shows in /proc/PID/environ.
@Suite struct InitialEnvironmentTests {
    @Test func theRangeIsFieldsFiftyAndFiftyOne() {
        // A command name with spaces and parentheses, as a program may name itself.
        var fields = (3...52).map { "\($0)" }
        fields[50 - 3] = "140000"
        fields[51 - 3] = "140123"
        let line = "4242 (evil) (name x) " + fields.joined(separator: " ") + "\n"
        let range = InitialEnvironment.environmentRange(Data(line.utf8))
        #expect(range?.start == 140_000)
        #expect(range?.end == 140_123)
    }

    @Test func hiddenOrOversizedRangesAreNotRead() {
        var fields = (3...52).map { _ in "0" }
        #expect(InitialEnvironment.environmentRange(Data(("1 (p) " + fields.joined(separator: " ")).utf8)) == nil, "the kernel shows 0 to a reader that may not ptrace")
        fields[50 - 3] = "4096"
        fields[51 - 3] = "\(4096 + InitialEnvironment.limit + 1)"
        #expect(InitialEnvironment.environmentRange(Data(("1 (p) " + fields.joined(separator: " ")).utf8)) == nil)
        #expect(InitialEnvironment.environmentRange(Data("1 (p) R 1 2".utf8)) == nil)
    }

    @Test func theBytesAreThoseOfProcEnviron() throws {
        let expected = try Data(contentsOf: URL(fileURLWithPath: "/proc/self/environ"))
        #expect(InitialEnvironment.read(base: "/proc/self", pid: getpid()) == expected)
    }
}
