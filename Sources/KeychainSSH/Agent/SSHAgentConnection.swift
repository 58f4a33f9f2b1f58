import Foundation
import KeychainCore

#if canImport(Glibc)
import Glibc
#endif

/// The program at the other end of an agent connection, as the kernel says at connect (`SO_PEERCRED`): what
/// prompts name, never what the client says about itself.
package struct SSHAgentPeer: Sendable, Hashable {
    /// The process.
    package var pid: Int32
    /// Its user.
    package var uid: UInt32
    /// Its executable's path (`/proc/PID/exe`), or `process PID` when the kernel does not say.
    package var program: String

    /// A peer of `pid`, `uid` and `program`.
    package init(pid: Int32, uid: UInt32, program: String) {
        self.pid = pid
        self.uid = uid
        self.program = program
    }

    /// The peer `pid`, its executable read from `/proc`.
    package static func of(pid: Int32, uid: UInt32, proc: String = "/proc") -> SSHAgentPeer {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("\(proc)/\(pid)/exe", &buffer, buffer.count - 1)
        let program = count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "process \(pid)"
        return SSHAgentPeer(pid: pid, uid: uid, program: program)
    }

    /// The program as a prompt names it: its path and process ID.
    package var displayName: String { "\(program) (process \(pid))" }
}

/// What the agent knows of one connection: who connected, and the SSH sessions the client bound to it.
package struct SSHAgentConnection: Sendable {
    /// The most sessions one connection binds (OpenSSH's agent keeps as many).
    package static let maximumBindings = 16

    /// The program that connected.
    package var peer: SSHAgentPeer
    /// The sessions bound, oldest first: hops of a forwarded agent, then the session that logs in.
    package var bindings: [SSHSessionBinding] = []

    /// A connection of `peer`.
    package init(peer: SSHAgentPeer) { self.peer = peer }

    /// The host the connection logs in to, for prompts: the last bound host key's fingerprint and type, and how
    /// many hops the agent was forwarded over; nil when no session is bound.
    package var destination: String? {
        guard let last = bindings.last else { return nil }
        let key = (try? SSHPublicKey(blob: last.hostKey)).map { "\($0.typeName) host key \($0.fingerprint)" } ?? "an unknown host key"
        let hops = bindings.count - 1
        return hops == 0 ? "the host with \(key)" : "the host with \(key), through \(hops) forwarding hop\(hops == 1 ? "" : "s")"
    }
}
