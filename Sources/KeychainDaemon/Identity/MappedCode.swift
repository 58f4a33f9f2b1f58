import CKeychainLinux
import Foundation
import KeychainCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The files a process runs code from (the executable mappings of `/proc/PID/maps`), judged against what its
/// program links: code put into a running program (a library loaded by a debugger that attached and left, or by
/// the program's own plugin loading steered elsewhere) makes the process untrusted.
///
/// A mapped file is the program's when it is
/// - its executable;
/// - a file only root can change (it and every folder above it belong to root and nobody else may write them):
///   the system's libraries, and the plugins (NSS modules, gconv, Python extensions) installed with them, which
///   the user cannot have planted;
/// - or a library in the executable's `DT_NEEDED` closure (``ELFDependencies``: matched by `DT_SONAME` from the
///   executable outwards) that belongs to root or to the executable's owner and that nobody else may write: the
///   libraries a program in the user's own folders ships with (a toolchain in the home folder).
///
/// Anything else — a library it does not link in a folder the user can write, a deleted file that was not root's, a
/// memory file (`memfd`) — is code that is not its program's. Verdicts are cached by executable and list of mapped
/// files, so a program that connects again costs one read of its `maps`.
final class MappedCode: Sendable {
    private let verdicts = Mutex<[Key: Verdict]>([:])
    /// The most verdicts kept; past it the cache starts afresh.
    static let cacheLimit = 1024
    /// The most bytes of `maps` read (a large program maps a few hundred files: some 50 KB).
    static let maximumMapsSize = 4 << 20
    /// The most executable mappings followed (the kernel's `vm.max_map_count` is 65,530 by default).
    static let maximumMappings = 65_536

    struct Verdict: Sendable { var reason: String? }

    /// What a verdict is cached under: the executable, and the files the process runs code from (by device and
    /// inode from `PROCMAP_QUERY`, else by path from the text of `maps`).
    struct Key: Hashable, Sendable {
        var executable: String
        var files: [UInt64] = []
        var paths: [String] = []
    }

    /// Why process `pid` (its `/proc` folder `base`) may run code that is not `executable`'s, or nil when every file
    /// it runs code from is its program's. Throws when its mappings cannot be read.
    ///
    /// On Linux 6.11 and later the kernel is asked for the executable file mappings alone (`PROCMAP_QUERY`, by device
    /// and inode; paths only when the list is new), which costs a fraction of formatting the whole of `maps`.
    func foreignCode(processFolder base: String, pid: Int32, executable: ExecutableFile) throws(KeychainError) -> String? {
        let unreadable = KeychainError(code: .missingEntitlement, message: "keychaind refuses process \(pid): keychaind cannot read /proc/\(pid)/maps.")
        let fd = open(base + "/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable }
        defer { close(fd) }
        let key: Key
        var named: [(path: String, inode: UInt64)]?
        if let files = MappedCode.queryMappings(fd, names: false) {
            key = Key(executable: executable.path, files: files.flatMap { [$0.device, $0.inode] })
        } else {
            guard let maps = FileSystem.readAll(fd, limit: MappedCode.maximumMapsSize) else { throw unreadable }
            let mapped = MappedCode.executableMappings(Array(maps))
            key = Key(executable: executable.path, paths: mapped.map(\.path))
            named = mapped
        }
        if let known = verdicts.withLock({ $0[key] }) { return known.reason }
        if named == nil {
            guard let files = MappedCode.queryMappings(fd, names: true) else { throw unreadable }
            var seen = Set<String>()
            named = files.compactMap { file in file.path.flatMap { seen.insert($0).inserted ? ($0, file.inode) : nil } }
        }
        let verdict = Verdict(reason: judge(named ?? [], executable: executable))
        verdicts.withLock { cache in
            if cache.count >= MappedCode.cacheLimit { cache.removeAll() }
            cache[key] = verdict
        }
        return verdict.reason
    }

    /// The process's file-backed executable mappings, each file once (by device and inode), with paths when `names`;
    /// nil when the kernel has no `PROCMAP_QUERY` or the walk failed.
    static func queryMappings(_ fd: Int32, names: Bool) -> [(device: UInt64, inode: UInt64, path: String?)]? {
        var found: [(device: UInt64, inode: UInt64, path: String?)] = []
        var seen = Set<[UInt64]>()
        var address: UInt64 = 0
        var name = [CChar](repeating: 0, count: names ? Int(PATH_MAX) + 16 : 0)
        for _ in 0..<maximumMappings {
            var mapping = ckeychain_code_mapping()
            let result = name.withUnsafeMutableBufferPointer { buffer in
                ckeychain_next_code_mapping(fd, address, &mapping, buffer.baseAddress, UInt32(buffer.count))
            }
            if result == 1 { return found }
            guard result == 0, mapping.end > address else { return nil }
            address = mapping.end
            let device = UInt64(mapping.dev_major) << 32 | UInt64(mapping.dev_minor)
            guard seen.insert([device, mapping.inode]).inserted else { continue }
            let path =
                names
                ? name.withUnsafeBufferPointer { buffer in
                    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                } : nil
            found.append((device, mapping.inode, path))
        }
        return nil
    }

    /// The files mapped executable (`x` in the permissions, a file behind them), each once, in the order of `maps`.
    static func executableMappings(_ maps: [UInt8]) -> [(path: String, inode: UInt64)] {
        var seen = Set<String>()
        var found: [(path: String, inode: UInt64)] = []
        var lineStart = 0
        while lineStart < maps.count {
            let lineEnd = maps[lineStart...].firstIndex(of: 0x0a) ?? maps.count
            defer { lineStart = lineEnd + 1 }
            // range perms offset dev inode   path
            var fields: [Range<Int>] = []
            var cursor = lineStart
            while fields.count < 5, cursor < lineEnd {
                while cursor < lineEnd, maps[cursor] == 0x20 { cursor += 1 }
                let start = cursor
                while cursor < lineEnd, maps[cursor] != 0x20 { cursor += 1 }
                if start < cursor { fields.append(start..<cursor) }
            }
            guard fields.count == 5, fields[1].count >= 3, maps[fields[1].lowerBound + 2] == 0x78 else { continue }
            var inode: UInt64 = 0
            for byte in maps[fields[4]] {
                guard byte >= 0x30, byte <= 0x39 else { inode = 0; break }
                inode = inode &* 10 &+ UInt64(byte - 0x30)
            }
            while cursor < lineEnd, maps[cursor] == 0x20 { cursor += 1 }
            guard inode != 0, cursor < lineEnd else { continue }
            let path = String(decoding: maps[cursor..<lineEnd], as: UTF8.self)
            if seen.insert(path).inserted { found.append((path, inode)) }
        }
        return found
    }

    /// Why the files in `mapped` are not all `executable`'s program's, or nil.
    func judge(_ mapped: [(path: String, inode: UInt64)], executable: ExecutableFile) -> String? {
        struct Candidate {
            var path: String
            var dependencies: ELFDependencies
            var accepted = false
        }
        var candidates: [Candidate] = []
        for (path, inode) in mapped where path != executable.path {
            if path.hasPrefix("/memfd:") || !path.hasPrefix("/") {
                return "it runs code from a file in memory (\(path)), not from its program's files"
            }
            var file = path
            let deleted = file.hasSuffix(" (deleted)")
            if deleted { file.removeLast(" (deleted)".count) }
            if FileOwnership.changeableByOthers(file, owners: [0], executable: false) == nil { continue }
            if deleted {
                return "it runs code from \(file), deleted since, which someone other than root could have put there"
            }
            let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { return "it runs code from \(file), which keychaind cannot examine" }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, UInt64(info.st_ino) == inode else {
                return "it runs code from \(file), which was replaced since it was loaded"
            }
            guard info.st_uid == 0 || info.st_uid == executable.owner, info.st_mode & 0o022 == 0 else {
                return "it runs code from \(file), which user \(info.st_uid) or others can change"
            }
            candidates.append(Candidate(path: file, dependencies: ELFDependencies(descriptor: fd) ?? ELFDependencies(soname: nil, needed: [])))
        }
        guard !candidates.isEmpty else { return nil }
        // The executable's DT_NEEDED closure among the mapped files, by name, from the executable outwards.
        let own = open(executable.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        var needed = Set<String>()
        if own >= 0 {
            needed.formUnion(ELFDependencies(descriptor: own)?.needed ?? [])
            close(own)
        }
        var grew = true
        while grew {
            grew = false
            for index in candidates.indices where !candidates[index].accepted {
                let name = candidates[index].dependencies.soname ?? String(candidates[index].path.split(separator: "/").last ?? "")
                if needed.contains(name) {
                    candidates[index].accepted = true
                    needed.formUnion(candidates[index].dependencies.needed)
                    grew = true
                }
            }
        }
        if let stranger = candidates.first(where: { !$0.accepted }) {
            return "it has loaded \(stranger.path), which its program does not link and which someone other than root can change"
        }
        return nil
    }
}
