import Foundation
import Testing
@testable import KeychainPrompt

/// Assuan's escaping, response lines and the bounded line reader.
struct AssuanTests {
    @Test func escapingKeepsPercentCarriageReturnAndLineFeedInsideTheParameter() {
        #expect(Assuan.escape("50% off\r\nrm -rf") == "50%25 off%0D%0Arm -rf")
        #expect(Assuan.escape("tab\there\u{7F}") == "tab%09here%7F")
        #expect(Assuan.escape(" leading space") == "%20leading space")
        #expect(Assuan.escape("café ✓") == "café ✓")
        #expect(Assuan.command("SETDESC", "50% off\r\nrm -rf") == "SETDESC 50%25 off%0D%0Arm -rf")
        #expect(Assuan.command("GETPIN") == "GETPIN")
    }

    @Test(arguments: [
        "50% off\r\nrm -rf", "%%%", "%25 is not unescaped twice", "\r\n\n\r", " a", "café ✓ 🔑", "",
        String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self),
    ])
    func escapingRoundTrips(text: String) throws {
        let escaped = Assuan.escape(text)
        #expect(!escaped.utf8.contains { $0 < 0x20 }, "no control byte goes on the wire")
        #expect(try Assuan.unescape(Array(escaped.utf8)) == Array(text.utf8))
    }

    @Test func unescapingAcceptsEitherCaseAndRefusesAStrayPercent() throws {
        #expect(try Assuan.unescape(Array("a%2fb%2Fc%0a".utf8)) == Array("a/b/c\n".utf8))
        #expect(throws: AssuanError.malformed("a `%` in a data line is not followed by two hex digits")) {
            try Assuan.unescape(Array("abc%4".utf8))
        }
        #expect(throws: AssuanError.self) { try Assuan.unescape(Array("%zz".utf8)) }
    }

    @Test func aLongParameterIsShortenedToFitTheLineLimit() {
        let line = Assuan.command("SETDESC", String(repeating: "%", count: 2000))
        #expect(line.utf8.count <= Assuan.maximumLineLength - 1)
        #expect(line.hasPrefix("SETDESC %25%25%25"))
        #expect(line.hasSuffix("%25…"))
        let plain = Assuan.command("SETDESC", String(repeating: "é", count: 600))
        #expect(plain.utf8.count <= Assuan.maximumLineLength - 1)
        #expect(plain.hasSuffix("é…"), "cut at a character boundary")
    }

    @Test func responseLinesParseIntoTheirKinds() throws {
        func parse(_ text: String) throws -> AssuanResponse { try AssuanResponse.parse(Array(text.utf8)) }
        #expect(try parse("OK") == .ok(""))
        #expect(try parse("OK Pleased to meet you") == .ok("Pleased to meet you"))
        #expect(try parse("ERR 83886179 Operation cancelled <Pinentry>") == .error(code: 83886179, text: "Operation cancelled <Pinentry>"))
        #expect(try parse("ERR 83886194") == .error(code: 83886194, text: ""))
        #expect(try parse("D 50%25 of%0Amy pass") == .data(Array("50% of\nmy pass".utf8)))
        #expect(try parse("S PASSWORD_FROM_CACHE") == .status(keyword: "PASSWORD_FROM_CACHE", text: ""))
        #expect(try parse("# a comment") == .comment)
        #expect(try parse("") == .comment)
        #expect(try parse("INQUIRE QUALITY abc") == .inquire(keyword: "QUALITY", parameters: "abc"))
        #expect(throws: AssuanError.malformed("an unknown response kind")) { try parse("BOGUS line") }
        #expect(throws: AssuanError.malformed("ERR without a numeric code")) { try parse("ERR cancelled") }
        #expect(throws: AssuanError.lineTooLong) { try parse("D " + String(repeating: "A", count: 998)) }
        #expect(GPGError.code(83886179) == GPGError.canceled)
        #expect(GPGError.code(83886194) == GPGError.notConfirmed)
    }

    @Test func theReaderSplitsLinesAndStopsAtTheLimitTheEndAndTheDeadline() throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { close(pair[0]) }
        var reader = AssuanLineReader(fd: pair[0])
        let soon = { ContinuousClock.now.advanced(by: .seconds(10)) }
        write(pair[1], "OK hello\nD x\n", 13)
        #expect(try reader.nextLine(deadline: soon()) == Array("OK hello".utf8))
        #expect(try reader.nextLine(deadline: soon()) == Array("D x".utf8))
        #expect(throws: AssuanError.timedOut) { try reader.nextLine(deadline: ContinuousClock.now.advanced(by: .milliseconds(50))) }

        // A line of exactly 1000 bytes with its LF passes; 1001 does not, and the reader does not wait for the LF.
        let longest = [UInt8](repeating: UInt8(ascii: "A"), count: 999) + [UInt8(ascii: "\n")]
        #expect(longest.withUnsafeBytes { write(pair[1], $0.baseAddress, $0.count) } == 1000)
        #expect(try reader.nextLine(deadline: soon()).count == 999)
        let tooLong = [UInt8](repeating: UInt8(ascii: "A"), count: 1500)
        #expect(tooLong.withUnsafeBytes { write(pair[1], $0.baseAddress, $0.count) } == 1500)
        #expect(throws: AssuanError.lineTooLong) { try reader.nextLine(deadline: soon()) }

        // The rest of that line (476 bytes), then the end of the stream.
        var fresh = AssuanLineReader(fd: pair[0])
        close(pair[1])
        #expect(throws: AssuanError.closed) { try fresh.nextLine(deadline: soon()) }
    }
}
