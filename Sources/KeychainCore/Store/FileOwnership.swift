import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who can change a file: what decides whether a path can vouch for the program or library that lies there. A file
/// only root can change (it and every folder above it belong to root, writable by nobody else) is what the system's
/// package manager installed, and no program of a user can have put it there.
package enum FileOwnership {
    /// Nil when `path` (links followed) is a regular file, owned by one of `owners`, in folders owned by them, and
    /// none of it writable by another user (a sticky folder, such as /tmp, counts as safe for files it holds that
    /// belong to `owners`); otherwise what is wrong.
    package static func changeableByOthers(_ path: String, owners: Set<uid_t>, executable: Bool = true) -> String? {
        guard let resolved = realpath(path, nil) else { return "it does not exist (\(String(cString: strerror(errno))))" }
        let target = String(cString: resolved)
        free(resolved)
        var info = stat()
        guard stat(target, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return "\(target) is not a regular file" }
        guard owners.contains(info.st_uid) else { return "\(target) belongs to user \(info.st_uid), not to root" }
        guard info.st_mode & 0o022 == 0 else { return "\(target) is writable by others (mode \(String(info.st_mode & 0o7777, radix: 8)))" }
        if executable, info.st_mode & 0o111 == 0 { return "\(target) is not executable" }
        var folder = (target as NSString).deletingLastPathComponent
        while true {
            var dir = stat()
            guard stat(folder, &dir) == 0 else { return "its folder \(folder) cannot be examined" }
            let sticky = dir.st_mode & S_ISVTX != 0
            guard owners.contains(dir.st_uid) || (sticky && dir.st_uid == 0) else { return "its folder \(folder) belongs to user \(dir.st_uid)" }
            guard dir.st_mode & 0o022 == 0 || sticky else { return "its folder \(folder) is writable by others" }
            if folder == "/" { return nil }
            folder = (folder as NSString).deletingLastPathComponent
        }
    }
}
