import KeychainCore
import NIOCore

/// Splits the bytes a client sends into frames. An oversized, malformed or (at end of stream) truncated
/// frame is an error, which closes that connection and no other.
struct WireFrameByteDecoder: ByteToMessageDecoder {
    typealias InboundOut = WireFrame

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard length >= 6, length <= WireFrame.maximumLength else {
            throw KeychainError(code: .corruptData, message: "A frame claims \(length) bytes.")
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let body = buffer.readBytes(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(try WireFrame.decode(body: body[...])))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            throw KeychainError(code: .corruptData, message: "The connection ended inside a frame.")
        }
        return .needMoreData
    }
}

/// Writes frames with their length prefix.
struct WireFrameByteEncoder: MessageToByteEncoder {
    typealias OutboundIn = WireFrame

    func encode(data: WireFrame, out: inout ByteBuffer) throws {
        out.writeBytes(data.encoded)
    }
}
