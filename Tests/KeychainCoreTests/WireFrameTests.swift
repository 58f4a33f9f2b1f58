import Foundation
import Testing
@testable import KeychainCore

@Suite struct WireFrameTests {
    static let request = WireFrame(id: 7, body: .request(.copyMatching, .dictionary(["class": .string("genp"), "r_Data": .bool(true)])))
    static let response = WireFrame(id: 7, body: .response(status: -25300, result: nil))
    static let dataResponse = WireFrame(id: 8, body: .response(status: 0, result: .data(Data("s3cret".utf8))))

    @Test func goldenFrames() throws {
        #expect(hex(Self.request.encoded) == Golden.requestFrameV1)
        #expect(hex(Self.response.encoded) == Golden.responseFrameV1)
        var decoder = WireFrameDecoder()
        decoder.append(unhex(Golden.requestFrameV1) + unhex(Golden.responseFrameV1))
        #expect(try decoder.next() == Self.request)
        #expect(try decoder.next() == Self.response)
        #expect(try decoder.next() == nil)
    }

    @Test func framesArriveOneByteAtATime() throws {
        let stream = Self.request.encoded + Self.dataResponse.encoded
        var decoder = WireFrameDecoder()
        var frames: [WireFrame] = []
        for byte in stream {
            decoder.append([byte])
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(frames == [Self.request, Self.dataResponse])
    }

    @Test func oversizedMalformedAndTruncatedFrames() throws {
        var oversized = WireFrameDecoder()
        oversized.append([0x7F, 0xFF, 0xFF, 0xFF, 1])
        #expect(throws: KeychainError.self) { try oversized.next() }
        var tiny = WireFrameDecoder()
        tiny.append([0, 0, 0, 1, 1])
        #expect(throws: KeychainError.self) { try tiny.next() }
        var wrongVersion = WireFrameDecoder()
        var bytes = Self.request.encoded
        bytes[4] = 9
        wrongVersion.append(bytes)
        #expect(throws: KeychainError.self) { try wrongVersion.next() }
        // A truncated frame just waits for more bytes.
        var truncated = WireFrameDecoder()
        truncated.append(Self.request.encoded.dropLast())
        #expect(try truncated.next() == nil)
        // Every corruption of the body either decodes to some frame or throws; it never traps.
        let good = Self.dataResponse.encoded
        for index in 4 ..< good.count {
            var damaged = good
            damaged[index] ^= 0xFF
            var decoder = WireFrameDecoder()
            decoder.append(damaged)
            _ = try? decoder.next()
        }
    }
}
