#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What an ELF object says it is and links: its `DT_SONAME` and `DT_NEEDED` entries, read from its dynamic section.
///
/// Only 64-bit little-endian objects (x86-64, AArch64, RISC-V 64) are read; anything else, or a file that is not a
/// well-formed one, reads as linking nothing, so whatever it maps must stand on its own. Every offset and size is
/// checked against the file's length, and the strings read are bounded.
struct ELFDependencies: Sendable, Equatable {
    /// The object's own name (`DT_SONAME`), nil for an executable or an object without one.
    var soname: String?
    /// The names of the libraries it links (`DT_NEEDED`), in order.
    var needed: [String]

    /// An object named `soname` that links `needed`.
    init(soname: String?, needed: [String]) {
        self.soname = soname
        self.needed = needed
    }

    /// The most bytes of a dynamic section or string table read (a real one is a few kilobytes).
    static let maximumTableSize = 1 << 20

    /// Reads the dynamic section of the file open at `fd`; nil when it is no 64-bit little-endian ELF object with a
    /// readable one.
    init?(descriptor fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let length = UInt64(info.st_size)
        guard let header = ELFDependencies.read(fd, at: 0, count: 64, within: length),
            header[0] == 0x7f, header[1] == 0x45, header[2] == 0x4c, header[3] == 0x46,
            header[4] == 2, header[5] == 1
        else { return nil }
        let programHeaders = header.u64(0x20)
        let entrySize = UInt64(header.u16(0x36)), count = UInt64(header.u16(0x38))
        guard entrySize >= 56, count > 0, count <= 512,
            let table = ELFDependencies.read(fd, at: programHeaders, count: entrySize * count, within: length)
        else { return nil }
        var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: UInt64, size: UInt64)?
        for index in 0..<Int(count) {
            let base = index * Int(entrySize)
            switch table.u32(base) {
            case 1: loads.append((table.u64(base + 16), table.u64(base + 8), table.u64(base + 32)))
            case 2: dynamic = (table.u64(base + 8), table.u64(base + 32))
            default: break
            }
        }
        guard let dynamic, dynamic.size <= UInt64(ELFDependencies.maximumTableSize),
            let entries = ELFDependencies.read(fd, at: dynamic.offset, count: dynamic.size, within: length)
        else { return nil }
        var neededOffsets: [UInt64] = []
        var sonameOffset: UInt64?
        var stringTable: UInt64?, stringSize: UInt64?
        var cursor = 0
        while cursor + 16 <= entries.count {
            let tag = entries.u64(cursor), value = entries.u64(cursor + 8)
            cursor += 16
            switch tag {
            case 0: cursor = entries.count
            case 1: neededOffsets.append(value)
            case 5: stringTable = value
            case 10: stringSize = value
            case 14: sonameOffset = value
            default: break
            }
        }
        guard let stringTable, let stringSize, stringSize <= UInt64(ELFDependencies.maximumTableSize),
            let segment = loads.first(where: { stringTable >= $0.vaddr && stringTable - $0.vaddr < $0.size }),
            let strings = ELFDependencies.read(fd, at: stringTable - segment.vaddr + segment.offset, count: stringSize, within: length)
        else { return nil }
        func string(_ offset: UInt64) -> String? {
            guard offset < UInt64(strings.count) else { return nil }
            let start = Int(offset)
            let end = strings[start...].firstIndex(of: 0) ?? strings.count
            return String(decoding: strings[start..<end], as: UTF8.self)
        }
        soname = sonameOffset.flatMap(string)
        needed = neededOffsets.compactMap(string)
    }

    /// `count` bytes at `offset`, when they lie within the file's `length`.
    static func read(_ fd: Int32, at offset: UInt64, count: UInt64, within length: UInt64) -> [UInt8]? {
        guard count <= UInt64(maximumTableSize), offset <= length, count <= length - offset else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(count))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pread(fd, base + filled, buffer.count - filled, off_t(offset) + off_t(filled))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            filled += n
        }
        return bytes
    }
}

extension [UInt8] {
    /// The little-endian integer of `size` bytes at `offset` (the caller checked the bounds).
    fileprivate func little(_ offset: Int, _ size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in (0..<size).reversed() { value = value << 8 | UInt64(self[offset + index]) }
        return value
    }

    fileprivate func u16(_ offset: Int) -> UInt16 { UInt16(truncatingIfNeeded: little(offset, 2)) }
    fileprivate func u32(_ offset: Int) -> UInt32 { UInt32(truncatingIfNeeded: little(offset, 4)) }
    fileprivate func u64(_ offset: Int) -> UInt64 { little(offset, 8) }
}
