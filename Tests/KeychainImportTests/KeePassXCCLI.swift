import Foundation

/// Runs keepassxc-cli to make test databases in a temporary folder.
struct KeePassXCCLI {
    /// Where keepassxc-cli is expected.
    static let path = "/usr/bin/keepassxc-cli"
    /// Whether the tests that need keepassxc-cli can run.
    static var available: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// A fresh folder, removed by `cleanUp`.
    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("kdbx-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// Removes the folder and what is in it.
    func cleanUp() { try? FileManager.default.removeItem(at: folder) }

    /// The path of `name` in the folder.
    func file(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// The output of keepassxc-cli with `arguments`, given `input` on standard input; throws unless it exits with 0.
    @discardableResult
    func run(_ arguments: [String], input: String = "") throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.path)
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        var environment = ProcessInfo.processInfo.environment
        environment["QT_QPA_PLATFORM"] = "offscreen"
        process.environment = environment
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let errors = ErrorCollector(stderr.fileHandleForReading)
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIFailure(description: "keepassxc-cli \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(errors.text())")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A keepassxc-cli failure.
    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
    }
}

/// Reads a pipe on a thread of its own so that neither pipe can fill up and stall the child.
final class ErrorCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let read = handle.readDataToEndOfFile()
            lock.lock()
            data = read
            lock.unlock()
            done.signal()
        }
    }

    /// Everything the pipe carried, once it is closed.
    func text() -> String {
        done.wait()
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }
}
