// A pinentry for the tests: speaks pinentry's Assuan protocol on standard input and output, and answers as a script
// file says, so a test can drive KeychainPrompt's real process handling without a person or a display.
//
// Environment:
//   SCRIPTED_PINENTRY_SCRIPT  a file of lines; each start takes (removes) the FIRST line, under an exclusive flock,
//                             so a test can queue one answer per prompt. A missing or empty file means `cancel`.
//   SCRIPTED_PINENTRY_DEFAULT a file whose first line (not taken) answers keychaind's approval prompts (titled "Allow
//                             access to the keychain?" or "Keychain passcode") when the script has no line left: a
//                             person who approves everything the same way. Any other prompt then answers as
//                             `nodisplay` (as if no pinentry could be shown). Without the file, `cancel`.
//   SCRIPTED_PINENTRY_LOG     a file this program appends to: `--- start PID` at each start, then `--- fds N N …`
//                             (the descriptors it was started with, from /proc/self/fd, its own log and listing
//                             left out), then every line it receives, exactly as it came on the wire (still
//                             percent-escaped).
//
// A script line is `[after MS] BEHAVIOUR`; `after MS` waits MS milliseconds before each answer to GETPIN or CONFIRM.
// BEHAVIOUR is one of:
//   pin TEXT      GETPIN answers `D TEXT` (percent-escaped) and `OK`; CONFIRM answers `OK`. TEXT is the rest of the
//                 line, spaces included.
//   or one or more of these words, one per GETPIN or CONFIRM in order (the last one repeats):
//   confirm       `OK` (GETPIN: `OK` with no data, an empty entry)
//   notok         `ERR 83886194 Not confirmed` (the not-ok button)
//   cancel        `ERR 83886179 Operation cancelled` (the cancel button, or the window closed)
//   hang          reads on but never answers; sleeps until killed
//   die           exits at once without answering
//   flood         answers with one endless `D` line (no LF ever)
//   flood-lines   answers with endless `D` lines of 900 bytes each
//   nodisplay     `ERR 83918950 Inappropriate ioctl for device` (what pinentry-curses says with no display and no
//                 terminal: the prompt cannot be shown)
// Every other command (SETTITLE, SETDESC, SETPROMPT, SETERROR, SETOK, SETNOTOK, SETCANCEL, SETTIMEOUT, OPTION …)
// answers `OK`; BYE answers `OK closing connection` and exits. The greeting is `OK Pleased to meet you`.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

enum Step: Equatable {
    case pin([UInt8]), confirm, notok, cancel, hang, die, flood, floodLines, nodisplay
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { raw in raw.baseAddress.map { write(fd, $0 + offset, raw.count - offset) } ?? 0 }
        if written < 0 {
            if errno == EINTR { continue }
            exit(2)
        }
        offset += written
    }
}

func reply(_ text: String) { writeAll(1, Array((text + "\n").utf8)) }

func environmentValue(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

let logFD: Int32 = environmentValue("SCRIPTED_PINENTRY_LOG").map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600) } ?? -1
func log(_ bytes: [UInt8]) {
    guard logFD >= 0 else { return }
    writeAll(logFD, bytes + [UInt8(ascii: "\n")])  // one write per line: appends from several processes never mix
}

/// Takes the first line of the script file (nil when there is none).
func takeScriptLine() -> [UInt8]? {
    guard let path = environmentValue("SCRIPTED_PINENTRY_SCRIPT") else { return nil }
    let fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard flock(fd, LOCK_EX) == 0 else { return nil }
    var content: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while content.count < 1 << 20 {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        content += buffer[..<count]
    }
    guard !content.isEmpty else { return nil }
    let end = content.firstIndex(of: UInt8(ascii: "\n")) ?? content.count
    let line = Array(content[..<end])
    let rest = end < content.count ? Array(content[(end + 1)...]) : []
    lseek(fd, 0, SEEK_SET)
    writeAll(fd, rest)
    _ = ftruncate(fd, off_t(rest.count))
    return line
}

func escape(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    for byte in bytes {
        if byte == UInt8(ascii: "%") || byte < 0x20 {
            let hex = Array("0123456789ABCDEF".utf8)
            out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        } else {
            out.append(byte)
        }
    }
    return out
}

// MARK: The script

/// The first line of the SCRIPTED_PINENTRY_DEFAULT file, when there is one.
func defaultLine() -> [UInt8]? {
    guard let path = environmentValue("SCRIPTED_PINENTRY_DEFAULT"), let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var line: [UInt8] = []
    while line.count < 4096 {
        let c = fgetc(file)
        if c == EOF || c == 0x0A { break }
        line.append(UInt8(truncatingIfNeeded: c))
    }
    return line.isEmpty ? nil : line
}

/// The steps a script line gives, and the delay before each answer.
func parse(_ raw: [UInt8]) -> (steps: [Step], delay: UInt32) {
    var line = raw
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    var text = String(decoding: line, as: UTF8.self)
    var delay: UInt32 = 0
    if text.hasPrefix("after ") {
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        if parts.count >= 2, let milliseconds = UInt32(parts[1]) { delay = milliseconds }
        text = parts.count == 3 ? String(parts[2]) : ""
    }
    if text.hasPrefix("pin ") || text == "pin" {
        return ([.pin(Array(text.utf8.dropFirst(4)))], delay)
    }
    let words: [Step] = text.split(separator: " ").map { word in
        switch word {
        case "confirm": .confirm
        case "notok": .notok
        case "hang": .hang
        case "die": .die
        case "flood": .flood
        case "flood-lines": .floodLines
        case "nodisplay": .nodisplay
        default: .cancel
        }
    }
    return (words.isEmpty ? [.cancel] : words, delay)
}

var delay: UInt32 = 0
var steps: [Step] = [.cancel]
/// The standing answer, used at the first question when no script line was taken (decided by the title then).
var standing: [UInt8]?
if let line = takeScriptLine() {
    (steps, delay) = parse(line)
} else {
    standing = defaultLine()
}
var title = ""

/// The descriptors open now, apart from the log's and the listing's own.
func inheritedDescriptors() -> [Int32] {
    guard let folder = opendir("/proc/self/fd") else { return [] }
    defer { closedir(folder) }
    let own = dirfd(folder)
    var found: [Int32] = []
    while let entry = readdir(folder) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let fd = Int32(name), fd != own, fd != logFD { found.append(fd) }
    }
    return found.sorted()
}

log(Array("--- start \(getpid())".utf8))
log(Array(("--- fds" + inheritedDescriptors().map { " \($0)" }.joined()).utf8))
reply("OK Pleased to meet you")

var asked = 0
@MainActor func answer(getpin: Bool) {
    if asked == 0, let line = standing {
        let approval = title.hasPrefix("Allow access to the keychain?") || title.hasPrefix("Keychain passcode")
        if approval { (steps, delay) = parse(line) } else { steps = [.nodisplay] }
    }
    let step = steps[min(asked, steps.count - 1)]
    asked += 1
    if delay > 0 { usleep(delay * 1000) }
    switch step {
    case .pin(let text):
        if getpin { writeAll(1, Array("D ".utf8) + escape(text) + [UInt8(ascii: "\n")]) }
        reply("OK")
    case .confirm:
        reply("OK")
    case .notok:
        reply("ERR 83886194 Not confirmed <Pinentry>")
    case .cancel:
        reply("ERR 83886179 Operation cancelled <Pinentry>")
    case .hang:
        while true { pause() }
    case .die:
        exit(3)
    case .flood:
        writeAll(1, Array("D ".utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "A"), count: 4096)
        while true { writeAll(1, chunk) }
    case .nodisplay:
        reply("ERR 83918950 Inappropriate ioctl for device <Pinentry>")
    case .floodLines:
        let line = Array("D ".utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: 898) + [UInt8(ascii: "\n")]
        while true { writeAll(1, line) }
    }
}

// MARK: The conversation

var pending: [UInt8] = []
var buffer = [UInt8](repeating: 0, count: 4096)
while true {
    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
        let line = Array(pending[..<newline])
        pending.removeFirst(newline + 1)
        log(line)
        let verb = String(decoding: line.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
        switch verb {
        case "BYE":
            reply("OK closing connection")
            exit(0)
        case "GETPIN":
            answer(getpin: true)
        case "CONFIRM":
            answer(getpin: false)
        case "SETTITLE":
            title = String(decoding: line.dropFirst(9), as: UTF8.self)
            reply("OK")
        default:
            reply("OK")
        }
    }
    let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
    if count < 0, errno == EINTR { continue }
    guard count > 0 else { exit(0) }
    pending += buffer[..<count]
    if pending.count > 1 << 16 { exit(4) }  // a client without line ends: give up
}
