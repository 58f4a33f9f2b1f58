import KeychainCore
import KeychainProtocol
import NIOCore

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
package struct RequestFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = InboundMessage

    package init() {}

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let start = buffer.readerIndex
        guard let announced = buffer.getInteger(at: start, as: UInt32.self) else { return .needMoreData }
        let length = try Frame.checkedLength(announced)
        guard buffer.readableBytes >= 4 + length,
              let version = buffer.getInteger(at: start + 4, as: UInt8.self),
              let id = buffer.getInteger(at: start + 6, as: UInt32.self) else { return .needMoreData }
        if version != Frame.version {
            buffer.moveReaderIndex(forwardBy: 4 + length)
            context.fireChannelRead(wrapInboundOut(.unsupportedVersion(version, id: id)))
            return .continue
        }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let body = buffer.readBytes(length: length) else { return .needMoreData }
        let frame = try Frame.decode(body: body)
        guard case .request(let request) = frame.body else {
            throw KeychainError(code: .corruptData, message: "A client sent a frame that is not a request.")
        }
        context.fireChannelRead(wrapInboundOut(.request(id: frame.id, request)))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            throw KeychainError(code: .corruptData, message: "The connection ended inside a frame.")
        }
        return .needMoreData
    }
}
