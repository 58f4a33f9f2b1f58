import Foundation

/// The executables the package builds, beside the test bundle in the build products folder.
public enum BuiltProducts {
    /// The build products folder.
    public static var directory: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// The built executable `name` (`security`, `keychaind`, `keychain-test-helper`, `git-credential-keychain`).
    public static func path(of name: String) throws -> String {
        var folders = [directory]
        if let first = CommandLine.arguments.first {
            folders.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent().path)
        }
        for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/" + name) {
            return folder + "/" + name
        }
        throw TestProcessError("The built `\(name)` was not found in \(folders). Build it first: swift build --build-tests.")
    }
}

/// Why a test could not run or start a program.
public struct TestProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
