// keychain: the installed programs in one binary (as busybox is), so that they share one copy of the Swift runtime,
// Foundation, the engine and the crypto. Which tool runs is decided by the executable's own name as the kernel
// reports it (/proc/self/exe: Support/package.sh installs the tools as hard links named security, keychaind and
// git-credential-keychain), else by argv[0] (a symbolic link), else by the first argument (`keychain security …`,
// which runs the tool again by that name).
import Foundation
import GitCredentialCommand
import KeychainVersion
import KeychaindCommand
import SecurityCommand

#if canImport(Glibc)
import Glibc
#endif

/// The tools this binary is.
let tools = ["security", "keychaind", "git-credential-keychain"]

/// The last component of `path`.
func baseName(_ path: String) -> String {
    path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
}

let ownName = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map(baseName)
let invokedAs = CommandLine.arguments.first.map(baseName)
let tool = [ownName, invokedAs].compactMap { $0 }.first { tools.contains($0) }

switch tool {
case "security":
    await SecurityTool.runCommandLine()
case "keychaind":
    await Keychaind.runCommandLine()
case "git-credential-keychain":
    GitCredentialHelper.main(arguments: CommandLine.arguments)
default:
    let arguments = CommandLine.arguments
    if arguments.count >= 2, tools.contains(arguments[1]) {
        // `keychain TOOL ARGS…`: run this binary again with TOOL as argv[0], so that every tool reads its command
        // line (argv, as bytes) as it would when run by its own name.
        // The raw argv from argv[1] on (bytes that are not UTF-8 stay as they are), and its terminating null.
        let argv = Array(UnsafeBufferPointer(start: CommandLine.unsafeArgv + 1, count: Int(CommandLine.argc)))
        execv("/proc/self/exe", argv)
        FileHandle.standardError.write(Data("keychain: cannot run \(arguments[1]): \(String(cString: strerror(errno)))\n".utf8))
        exit(127)
    }
    if arguments.count == 2, arguments[1] == "--version" {
        print(KeychainVersion.line(program: "keychain"))
        exit(0)
    }
    FileHandle.standardError.write(
        Data(
            """
            usage: keychain TOOL [ARGUMENTS…]   (or run the tool by its own name: a link to this binary)
            tools: \(tools.joined(separator: ", "))
            \(KeychainVersion.line(program: "keychain"))

            """.utf8))
    exit(arguments.count == 2 && ["-h", "--help", "help"].contains(arguments[1]) ? 0 : 2)
}
