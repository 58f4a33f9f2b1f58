import Foundation
import KeychainCore

/// One message on keychaind's socket: a request from a client, the daemon's response, or the daemon's refusal
/// of a protocol version it does not speak.
///
/// The frame rule, the same on both sides (big-endian):
/// ```
/// u32 length of the rest | u8 version | u8 kind | u32 request id | body
/// kind 1 request:  a KeychainRequest (tag byte, payload)
/// kind 2 response: a KeychainResponse (tag byte, payload)
/// kind 3 version refusal: u8 the version the daemon speaks | u32-prefixed UTF-8 message
/// ```
/// keychaind speaks first: on each new connection it identifies the client, then sends the ``greeting`` (a
/// response with id 0); a client sends its first request only after reading it, and keychaind answers only requests
/// sent after it. A connection keychaind refuses gets a failure response with id 0 in place of the greeting; a
/// connection it closes later (a limit, another process sending on it) gets one before the close.
///
/// The header and the version refusal never change between versions, so a client of any version can read why it
/// was turned away. A frame shorter than its header, longer than ``maximumLength``, of an unknown kind, or whose
/// body does not parse to the last byte is an error: the connection that sent it is closed, and nothing else is
/// affected.
package struct Frame: Sendable {
    /// The protocol version this build speaks. Version 1 carried property-list dictionaries; version 2 had no
    /// greeting (a client sent at once).
    package static let version: UInt8 = 3
    /// The largest frame accepted (16 MiB): a backup of a large keychain fits, a hostile length does not.
    package static let maximumLength = 16 << 20
    /// Bytes after the length prefix that every frame has: version, kind and request id.
    package static let headerLength = 6

    /// What a frame carries.
    package enum Body: Sendable {
        case request(KeychainRequest)
        case response(KeychainResponse)
        /// The daemon does not speak the client's version.
        case versionRefused(supported: UInt8, message: String)
    }

    package var id: UInt32
    package var body: Body

    /// What keychaind sends a client it has identified, before anything else: id 0, an empty answer.
    package static let greeting = Frame(id: 0, body: .response(.done))

    package init(id: UInt32, body: Body) {
        self.id = id
        self.body = body
    }

    /// The frame's bytes, length prefix included.
    package var encoded: [UInt8] {
        var w = BinaryWriter(capacity: 256)
        w.u32(0)  // the length, filled in below
        w.u8(Frame.version)
        switch body {
        case .request(let request):
            w.u8(1); w.u32(id); request.encode(into: &w)
        case .response(let response):
            w.u8(2); w.u32(id); response.encode(into: &w)
        case .versionRefused(let supported, let message):
            w.u8(3); w.u32(id); w.u8(supported); w.string(message)
        }
        w.patchU32(UInt32(w.bytes.count - 4), at: 0)
        return w.bytes
    }

    /// The length a frame's prefix announces, checked against the frame rule.
    package static func checkedLength(_ length: UInt32) throws(KeychainError) -> Int {
        guard length >= UInt32(headerLength), length <= UInt32(maximumLength) else {
            throw KeychainError(code: .corruptData, message: "A keychaind message claims \(length) bytes (the limit is \(maximumLength)); the connection is closed.")
        }
        return Int(length)
    }

    /// Parses a frame's body (the bytes after the length prefix). A version refusal is read whatever its version
    /// byte; any other frame of another version is refused with a ``VersionMismatch``.
    package static func decode(body bytes: some Collection<UInt8>) throws(KeychainError) -> Frame {
        try decode(body: Array(bytes))
    }

    /// Parses a frame's body held in an array (no copy).
    package static func decode(body bytes: [UInt8]) throws(KeychainError) -> Frame {
        try decode(body: bytes, from: 0)
    }

    /// Parses the frame body that starts at `offset` of `bytes` and runs to its end (no copy): a client reads the
    /// length prefix and the body into one array.
    package static func decode(body bytes: [UInt8], from offset: Int) throws(KeychainError) -> Frame {
        var r = BinaryReader(bytes, from: offset, truncated: malformedMessage)
        let version = try r.u8()
        let kind = try r.u8()
        let id = try r.u32()
        if version != Frame.version, kind == 1 || kind == 2 {
            throw VersionMismatch.error(peerVersion: version, receivedByDaemon: kind == 1)
        }
        let body: Body
        switch kind {
        case 3:
            body = .versionRefused(supported: try r.u8(), message: try r.string())
        case 1:
            body = .request(try KeychainRequest.decode(&r))
        case 2:
            body = .response(try KeychainResponse.decode(&r))
        default:
            throw malformedMessage
        }
        guard r.isAtEnd else { throw malformedMessage }
        return Frame(id: id, body: body)
    }
}

/// A peer that speaks another protocol version.
package enum VersionMismatch {
    /// The error for a frame of `peerVersion`: a request keychaind received, or a response a client received.
    package static func error(peerVersion: UInt8, receivedByDaemon: Bool) -> KeychainError {
        let message =
            receivedByDaemon
            ? message(daemonVersion: Frame.version, clientVersion: peerVersion)
            : message(daemonVersion: peerVersion, clientVersion: Frame.version)
        return KeychainError(code: .notAvailable, status: .wrongSecVersion, message: message)
    }

    /// What both sides say when versions differ.
    package static func message(daemonVersion: UInt8, clientVersion: UInt8) -> String {
        "keychaind speaks keychain protocol \(daemonVersion) and this program speaks protocol \(clientVersion). Install keychaind, security and the programs that use the keychain from the same swift-keychain release, then restart keychaind (systemctl --user restart keychaind)."
    }

    /// The refusal for a client of `peerVersion` asking request `id`, in a form that client reads. A version 1
    /// client reads only version 1 responses (an `OSStatus` and a property-list dictionary with the code and
    /// message), so it gets one; a newer client reads the version refusal frame, whose layout never changes.
    package static func refusal(peerVersion: UInt8, id: UInt32) -> [UInt8] {
        let message = message(daemonVersion: Frame.version, clientVersion: peerVersion)
        guard peerVersion == 1 else {
            return Frame(id: id, body: .versionRefused(supported: Frame.version, message: message)).encoded
        }
        var w = BinaryWriter(capacity: 256)
        w.u8(1); w.u8(2); w.u32(id)
        w.u32(UInt32(bitPattern: KeychainStatus.wrongSecVersion.rawValue))
        w.u8(1)
        PlistCoding.encode(.dictionary(["code": .string(KeychainError.Code.notAvailable.rawValue), "message": .string(message)]), into: &w)
        var out = BinaryWriter(capacity: w.bytes.count + 4)
        out.u32(UInt32(w.bytes.count))
        out.raw(w.bytes)
        return out.bytes
    }
}
