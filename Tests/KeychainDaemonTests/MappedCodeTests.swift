import Foundation
import KeychainTestSupport
import Testing
import KeychainCore
@testable import KeychainDaemon

#if canImport(Glibc)
import Glibc
#endif

/// How keychaind reads what a process runs code from (`/proc/PID/maps`) and what an ELF object links.
@Suite struct MappedCodeTests {
    @Test func theExecutableMappingsOfMapsAreReadOncePerFile() {
        let maps = """
            55d0c0000000-55d0c0001000 r--p 00000000 fe:00 4242                       /usr/bin/prog
            55d0c0001000-55d0c0002000 r-xp 00001000 fe:00 4242                       /usr/bin/prog
            7f0000000000-7f0000001000 r-xp 00000000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libc.so.6
            7f0000001000-7f0000002000 r-xp 00001000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libc.so.6
            7f0000002000-7f0000003000 rw-p 00000000 00:00 0 
            7f0000003000-7f0000004000 r-xp 00000000 00:01 99                         /memfd:jit (deleted)
            7f0000004000-7f0000005000 r-xp 00000000 fe:00 12                         /home/u/my lib/libx.so
            7ffc00000000-7ffc00001000 r-xp 00000000 00:00 0                          [vdso]
            """
        let found = MappedCode.executableMappings(Array(maps.utf8))
        #expect(found.map(\.path) == ["/usr/bin/prog", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/memfd:jit (deleted)", "/home/u/my lib/libx.so"])
        #expect(found.map(\.inode) == [4242, 77, 99, 12])
        #expect(MappedCode.executableMappings(Array("garbage\n\n x y\n".utf8)).isEmpty)
    }

    @Test func anELFObjectsNameAndWhatItLinksAreRead() throws {
        let helper = try BuiltProducts.path(of: "keychain-test-helper")
        let fd = open(helper, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let dependencies = try #require(ELFDependencies(descriptor: fd))
        #expect(dependencies.soname == nil, "an executable has no DT_SONAME")
        #expect(dependencies.needed.contains("libc.so.6") && dependencies.needed.contains("libswiftCore.so"), "\(dependencies.needed)")
    }

    @Test func aFileThatIsNoELFObjectLinksNothing() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("elf-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Not ELF; an ELF header whose tables point past the end; an empty file.
        var header = [UInt8](repeating: 0, count: 64)
        header[0...5] = [0x7f, 0x45, 0x4c, 0x46, 2, 1]
        header[0x20] = 0xff; header[0x27] = 0x7f  // program headers far past the end
        header[0x36] = 56; header[0x38] = 3
        for (name, bytes) in [("text", Array("#!/bin/sh\n".utf8)), ("truncated", header), ("empty", [])] {
            let path = folder + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let fd = open(path, O_RDONLY)
            try #require(fd >= 0)
            #expect(ELFDependencies(descriptor: fd) == nil, "\(name)")
            close(fd)
        }
    }

    /// A library the program links may lie in a folder the user can write (a toolchain in the home folder) when it
    /// belongs to the executable's owner; one it does not link may not.
    @Test func aLibraryInTheExecutablesNeededClosureMayLieInTheUsersFolders() throws {
        let helper = try BuiltProducts.path(of: "keychain-test-helper")
        let libraries = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
        let linked = try #require(libraries.map { $0 + "/libz.so.1" }.first { FileManager.default.fileExists(atPath: $0) }, "zlib, which the helper links")
        let unlinked = try #require(libraries.map { $0 + "/libattr.so.1" }.first { FileManager.default.fileExists(atPath: $0) })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("libs-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(chmod(folder, 0o777) == 0)
        func copy(_ library: String, as name: String) throws -> (path: String, inode: UInt64) {
            let path = folder + "/" + name
            try FileManager.default.copyItem(atPath: URL(fileURLWithPath: library).resolvingSymlinksInPath().path, toPath: path)
            var info = stat()
            try #require(stat(path, &info) == 0)
            return (path, UInt64(info.st_ino))
        }
        var info = stat()
        try #require(stat(helper, &info) == 0)
        let executable = ExecutableFile(path: helper, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), owner: getuid(), untrusted: nil)
        let zlib = try copy(linked, as: "libz.so.1.2.13"), attr = try copy(unlinked, as: "libattr.so.1")
        let code = MappedCode()
        #expect(code.judge([(helper, UInt64(info.st_ino)), zlib], executable: executable) == nil, "zlib is in its DT_NEEDED closure, by its DT_SONAME")
        let verdict = code.judge([zlib, attr], executable: executable)
        #expect(verdict == "it has loaded \(attr.path), which its program does not link and which someone other than root can change")
        // A library of another user than the executable's owner (root's executable, or another user's).
        if getuid() == 0 { #expect(chown(zlib.path, 65534, 65534) == 0) }
        let owner: uid_t = getuid() == 0 ? 0 : 4242
        let foreign = ExecutableFile(path: helper, device: 0, inode: 0, owner: owner, untrusted: nil)
        #expect(MappedCode().judge([zlib], executable: foreign)?.contains("or others can change") == true)
    }
}

/// Whether this kernel answers `PROCMAP_QUERY` (Linux 6.11+).
let kernelAnswersMappingQueries: Bool = {
    let fd = open("/proc/self/maps", O_RDONLY)
    defer { close(fd) }
    return MappedCode.queryMappings(fd, names: false) != nil
}()

extension MappedCodeTests {
    /// The kernel's answer to `PROCMAP_QUERY` names the same files as the text of `maps`.
    @Test(.enabled(if: kernelAnswersMappingQueries, "needs PROCMAP_QUERY (Linux 6.11+); older kernels use the text of maps"))
    func theKernelsQueryAndTheTextOfMapsNameTheSameFiles() throws {
        let fd = open("/proc/self/maps", O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let queried = try #require(MappedCode.queryMappings(fd, names: true))
        let textFile = open("/proc/self/maps", O_RDONLY)
        try #require(textFile >= 0)
        defer { close(textFile) }
        let text = try #require(FileSystem.readAll(textFile, limit: MappedCode.maximumMapsSize))
        let listed = MappedCode.executableMappings(Array(text))
        #expect(Set(queried.compactMap(\.path)) == Set(listed.map(\.path)))
        #expect(Set(queried.map(\.inode)) == Set(listed.map(\.inode)))
        #expect(queried.contains { $0.path?.hasSuffix("/swift-keychainPackageTests.xctest") == true })
    }
}
