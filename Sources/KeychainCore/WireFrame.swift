import Foundation

/// One message on keychaind's socket (issue 4): a request from a client or the daemon's response.
///
/// Frame, version 1 (big-endian):
/// ```
/// u32 length of the rest | u8 version = 1 | u8 kind (1 request, 2 response) | u32 request id
/// request:  u8 operation | PlistCoding value (the call's arguments, a dictionary)
/// response: i32 OSStatus | u8 has-result (0/1) | PlistCoding value when 1
/// ```
/// A frame longer than ``maximumLength``, with an unknown version or kind, or whose body does not parse,
/// is an error: the connection that sent it is closed, and nothing else is affected.
package struct WireFrame: Sendable, Hashable {
    package static let version: UInt8 = 1
    /// The largest frame accepted (16 MiB): a backup of a large keychain fits, a hostile length does not.
    package static let maximumLength = 16 << 20

    /// What the daemon is asked to do. The first four use Apple's `SecXPCOperation` numbers.
    package struct Operation: RawRepresentable, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        package static let add = Operation(rawValue: 0)
        package static let copyMatching = Operation(rawValue: 1)
        package static let update = Operation(rawValue: 2)
        package static let delete = Operation(rawValue: 3)
        package static let lock = Operation(rawValue: 10)
        package static let unlock = Operation(rawValue: 11)
        package static let setPasscode = Operation(rawValue: 12)
        package static let backup = Operation(rawValue: 13)
        package static let restore = Operation(rawValue: 14)
        package static let status = Operation(rawValue: 15)
        package static let appAdd = Operation(rawValue: 16)
        package static let appList = Operation(rawValue: 17)
        package static let appRemove = Operation(rawValue: 18)
        /// Create or use a key that never leaves the keychain (`TokenKeys`).
        package static let tokenKey = Operation(rawValue: 20)
    }

    package enum Body: Sendable, Hashable {
        case request(Operation, PlistValue)
        case response(status: Int32, result: PlistValue?)
    }

    package var id: UInt32
    package var body: Body

    package init(id: UInt32, body: Body) {
        self.id = id
        self.body = body
    }

    /// The frame's bytes, length prefix included.
    package var encoded: [UInt8] {
        var w = BinaryWriter(capacity: 64)
        w.u8(WireFrame.version)
        switch body {
        case .request(let operation, let arguments):
            w.u8(1)
            w.u32(id)
            w.u8(operation.rawValue)
            PlistCoding.encode(arguments, into: &w)
        case .response(let status, let result):
            w.u8(2)
            w.u32(id)
            w.u32(UInt32(bitPattern: status))
            if let result {
                w.u8(1)
                PlistCoding.encode(result, into: &w)
            } else {
                w.u8(0)
            }
        }
        var out = BinaryWriter(capacity: w.bytes.count + 4)
        out.u32(UInt32(w.bytes.count))
        out.raw(w.bytes)
        return out.bytes
    }

    static let malformed = KeychainError(code: .corruptData, message: "A keychaind message is malformed; the connection is closed.")

    /// Parses a frame's body (the bytes after the length prefix).
    package static func decode(body bytes: ArraySlice<UInt8>) throws(KeychainError) -> WireFrame {
        var r = BinaryReader(bytes, truncated: malformed)
        guard try r.u8() == version else { throw malformed }
        let kind = try r.u8()
        let id = try r.u32()
        switch kind {
        case 1:
            let operation = Operation(rawValue: try r.u8())
            let arguments = try PlistCoding.decode(&r, depth: 0)
            guard r.isAtEnd else { throw malformed }
            return WireFrame(id: id, body: .request(operation, arguments))
        case 2:
            let status = Int32(bitPattern: try r.u32())
            let result: PlistValue?
            switch try r.u8() {
            case 0: result = nil
            case 1: result = try PlistCoding.decode(&r, depth: 0)
            default: throw malformed
            }
            guard r.isAtEnd else { throw malformed }
            return WireFrame(id: id, body: .response(status: status, result: result))
        default:
            throw malformed
        }
    }
}

/// Splits a byte stream into frames as bytes arrive.
package struct WireFrameDecoder: Sendable {
    private var buffer: [UInt8] = []

    package init() {}

    /// Adds received bytes.
    package mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// The next complete frame, or nil until more bytes arrive. Throws for an oversized or malformed frame,
    /// after which the stream is unusable (close the connection).
    package mutating func next() throws(KeychainError) -> WireFrame? {
        guard buffer.count >= 4 else { return nil }
        let length = buffer[0 ..< 4].reduce(0) { $0 << 8 | Int($1) }
        guard length >= 6, length <= WireFrame.maximumLength else {
            throw KeychainError(code: .corruptData, message: "A keychaind message claims \(length) bytes; the connection is closed.")
        }
        guard buffer.count >= 4 + length else { return nil }
        let frame = try WireFrame.decode(body: buffer[4 ..< 4 + length])
        buffer.removeFirst(4 + length)
        return frame
    }
}
