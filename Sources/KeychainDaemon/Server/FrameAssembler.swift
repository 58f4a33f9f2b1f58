import KeychainCore
import KeychainProtocol

/// What a client's bytes amount to, one frame at a time.
package enum InboundMessage: Sendable {
    /// A request of this protocol version.
    case request(id: UInt32, KeychainRequest)
    /// A frame of another protocol version: the client is told why it is turned away, then the connection closes.
    case unsupportedVersion(UInt8, id: UInt32)
}

/// Splits the bytes a client sends into requests, by the frame rule both sides share (``Frame``). An oversized,
/// malformed or (at end of stream) truncated frame, or a frame that is not a request, is an error, which closes
/// that connection and no other.
package struct FrameAssembler: Sendable {
    private var bytes: [UInt8] = []
    /// Where the unread bytes start in `bytes`.
    private var start = 0

    package init() {}

    /// Whether no byte of a next frame has arrived.
    package var isEmpty: Bool { start == bytes.count }

    /// The length the frame in progress announces (prefix included), once its prefix has arrived and is valid.
    package func announcedLength() throws(KeychainError) -> Int? {
        guard bytes.count - start >= 4 else { return nil }
        let announced = UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
        return try 4 + Frame.checkedLength(announced)
    }

    /// Adds received bytes.
    package mutating func append(_ received: UnsafeRawBufferPointer) {
        if start > 0, start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 << 10)
            start = 0
        }
        bytes.append(contentsOf: received)
    }

    /// Makes room for a frame of `length` bytes in one allocation.
    package mutating func reserveCapacity(_ length: Int) {
        bytes.reserveCapacity(bytes.count - start + length)
    }

    /// The next whole frame, or nil until more bytes arrive.
    package mutating func next() throws(KeychainError) -> InboundMessage? {
        guard let length = try announcedLength(), bytes.count - start >= length else { return nil }
        let body = start + 4
        start += length
        defer { compact() }
        let version = bytes[body]
        if version != Frame.version {
            let id = length >= 10 ? UInt32(bytes[body + 2]) << 24 | UInt32(bytes[body + 3]) << 16 | UInt32(bytes[body + 4]) << 8 | UInt32(bytes[body + 5]) : 0
            return .unsupportedVersion(version, id: id)
        }
        let frame = try body == 4 && start == bytes.count ? Frame.decode(body: bytes, from: 4) : Frame.decode(body: bytes[body..<start])
        guard case .request(let request) = frame.body else {
            throw KeychainError(code: .corruptData, message: "A client sent a frame that is not a request.")
        }
        return .request(id: frame.id, request)
    }

    /// Drops what has been read once it is most of the buffer.
    private mutating func compact() {
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 << 10)
            start = 0
        } else if start > bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
    }
}
