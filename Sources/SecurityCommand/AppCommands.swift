import ArgumentParser
import Foundation
import KeychainKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `security app`: keychaind's program registry, which gives programs their access groups the way a code
/// signature's entitlements do on Apple's systems.
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Register programs and the access groups keychaind gives them.",
        discussion: """
            keychaind identifies each caller from the kernel: an executable by its path and SHA-256, a Flatpak app \
            by its app ID, a snap by its name. A registered program gets the access groups registered for it; \
            any other program gets a private group named by its executable's path (or app ID). These verbs go \
            through keychaind when KEYCHAIN_DAEMON_SOCKET names it or its default socket answers (it accepts them \
            only from the security installed beside it, after the keychain's passcode when one is set: you are \
            asked on the terminal); otherwise they change the registry in KEYCHAIN_HOME directly. `consents` and \
            `revoke` list and forget what the person answered to "allow PROGRAM to use …?" (always or deny).
            """,
        subcommands: [AppAdd.self, AppList.self, AppRemove.self, AppConsents.self, AppRevoke.self]
    )
}

/// `security app add`: registers a program with its access groups and application identifier.
struct AppAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Register a program and the access groups it may use.",
        discussion: """
            The program gets its groups in Apple's order: the --group values (the first is where its new items \
            go), then its --application-identifier. An executable is registered by its path (made absolute, \
            symlinks resolved) and the SHA-256 of its contents now: a rebuilt or updated binary is another \
            program until it is registered again. An interpreter (python3, node, sh, …) is one program for every \
            script it runs, so registering it gives all of them these groups. Registering a program again \
            replaces its registration. Goes through keychaind when it is reachable (see `security help app`). \
            Prints the registration as `security app list` shows it. A missing, unreadable or non-executable \
            file exits 1.
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "app add"

    @Option(
        name: [.customShort("g"), .customLong("group")],
        help: ArgumentHelp(
            "An access group the program may use (repeat for more; the first is where its new items go; \"*\" is every group).",
            valueName: "group"))
    var groups: [String] = []

    @Option(
        name: [.customShort("i"), .customLong("application-identifier")],
        help: ArgumentHelp("The program's application identifier (TEAMID.com.example.app), its last access group.", valueName: "id"))
    var applicationIdentifier: String?

    @Option(name: .customLong("flatpak"), help: ArgumentHelp("Register the Flatpak app with this app ID instead of an executable.", valueName: "app-id"))
    var flatpak: String?

    @Option(name: .customLong("snap"), help: ArgumentHelp("Register the snap with this name instead of an executable.", valueName: "name"))
    var snap: String?

    @Argument(help: ArgumentHelp("The program's executable file.", valueName: "path"))
    var path: String?

    func validate() throws {
        guard [path, flatpak, snap].compactMap({ $0 }).count == 1 else {
            throw ValidationError("Name one program: an executable PATH, --flatpak APPID or --snap NAME.")
        }
        guard !groups.isEmpty || applicationIdentifier != nil else {
            throw ValidationError("Give at least one --group or an --application-identifier: they are what the registration grants.")
        }
        for group in groups where !Self.isWellFormed(group) {
            throw ValidationError("Access group '\(group)' is empty or contains a space or comma; access groups look like TEAMID.com.example.shared.")
        }
        if let applicationIdentifier, !Self.isWellFormed(applicationIdentifier) || applicationIdentifier == "*" {
            throw ValidationError("Application identifier '\(applicationIdentifier)' is not one app's identifier; they look like TEAMID.com.example.app.")
        }
        if let flatpak, !Self.isWellFormed(flatpak) || flatpak.contains("/") || !flatpak.contains(".") || flatpak.hasPrefix("-") {
            throw ValidationError("'\(flatpak)' is not a Flatpak app ID; they look like org.example.App (see `flatpak list --app`).")
        }
        if let snap, snap.isEmpty || snap.hasPrefix("-") || !snap.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }) {
            throw ValidationError("'\(snap)' is not a snap name; snap names are lower-case letters, digits and hyphens (see `snap list`).")
        }
    }

    /// Whether `name` can be an access group, app ID or identifier: not empty, no spaces, commas or control
    /// characters (which would also break `security app list`'s fields).
    static func isWellFormed(_ name: String) -> Bool {
        !name.isEmpty && !name.unicodeScalars.contains { $0 == "," || $0.properties.isWhitespace || $0.properties.generalCategory == .control }
    }

    func run() async throws {
        let program: KeychainStore.RegisteredProgram.Program
        if let flatpak {
            program = .flatpak(flatpak)
        } else if let snap {
            program = .snap(snap)
        } else if let path {
            let resolved = try Self.executable(path)
            let digest: String
            do {
                digest = try KeychainStore.RegisteredProgram.sha256(ofFileAt: resolved)
            } catch {
                throw ToolFailure.input(Self.function, "Cannot read \(path) to record its SHA-256. Check its permissions.")
            }
            program = .executable(path: resolved, sha256: digest)
        } else {
            throw ValidationError("Name one program: an executable PATH, --flatpak APPID or --snap NAME.")
        }
        var seen = Set<String>()
        let entry = KeychainStore.RegisteredProgram(
            program: program, applicationIdentifier: applicationIdentifier,
            accessGroups: groups.filter { seen.insert($0).inserted })
        try ProgramRegistry.current().register(entry, function: Self.function)
        Output.standardOutput("registered \(entry.listLine)\n")
    }

    /// The absolute path of the executable `argument` names, with every symlink resolved (what the kernel
    /// reports for a running program), or a failure saying what is wrong with the file.
    static func executable(_ argument: String) throws(ToolFailure) -> String {
        guard let resolved = realpath(argument, nil) else {
            let reason = errno
            if reason == ENOENT || reason == ENOTDIR {
                throw .input(function, "\(argument) does not exist. Give the path of the program's executable file (for a command on PATH: \"$(command -v NAME)\").")
            }
            throw .input(function, "Cannot find \(argument): \(String(cString: strerror(reason))).")
        }
        let path = String(cString: resolved)
        free(resolved)
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw .input(function, "\(argument) is not a file. Give the path of the program's executable file.")
        }
        guard access(path, X_OK) == 0 else {
            throw .input(function, "\(argument) is not executable. Register the program that runs it, or make it executable (chmod +x) first.")
        }
        guard access(path, R_OK) == 0 else {
            throw .input(function, "\(argument) is not readable, so its SHA-256 cannot be recorded. Check its permissions.")
        }
        return path
    }
}

/// `security app list`: prints the registered programs, one per line.
struct AppList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the registered programs.",
        discussion: """
            Prints one program per line, sorted, as fields separated by two spaces: the program (an executable's \
            absolute path, flatpak:APPID or snap:NAME); for an executable, sha256= and the first 12 hex digits of \
            the SHA-256 recorded when it was registered; groups= and its access groups separated by commas, when \
            it has any; app-id= and its application identifier, when it has one. For example: \
            "/usr/bin/foo  sha256=0123456789ab  groups=TEAM.a,TEAM.shared  app-id=TEAM.com.example.foo". Prints \
            nothing when no program is registered.
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "app list"

    func run() async throws {
        let entries = try ProgramRegistry.current().entries(function: Self.function)
        let lines = entries.sorted { $0.programName < $1.programName }.map { $0.listLine + "\n" }
        Output.standardOutput(lines.joined())
    }
}

/// `security app remove`: removes a program's registration.
struct AppRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a program's registration.",
        discussion: """
            Names the program as `security app list` shows it: an executable's path (a relative path or a \
            symlink is resolved while the file exists), a Flatpak app ID or a snap name (with or without the \
            flatpak: or snap: prefix). Prints "removed N program(s)". The program then gets only a private access \
            group of its own; its items in the registered groups stay, out of its reach. When no program is \
            registered under the name, exits 44, as a lookup that finds nothing does.
            """
    )

    /// The function name printed in this verb's errors.
    static let function = "app remove"

    @Argument(help: ArgumentHelp("The program: its executable's path, Flatpak app ID or snap name.", valueName: "program"))
    var program: String

    func run() async throws {
        let name = Self.registryName(program)
        let removed = try ProgramRegistry.current().remove(name, function: Self.function)
        guard removed > 0 else {
            throw ToolFailure(
                Self.function, status: .itemNotFound,
                detail: "No program named \(name) is registered; `security app list` shows the registered ones.")
        }
        Output.standardOutput("removed \(removed) program\(removed == 1 ? "" : "s")\n")
    }

    /// The name the registry knows `argument` by: a path (anything with a slash) made absolute with its
    /// symlinks resolved when the file still exists; an app ID or snap name without its list prefix.
    static func registryName(_ argument: String) -> String {
        if argument.contains("/") {
            if let resolved = realpath(argument, nil) {
                defer { free(resolved) }
                return String(cString: resolved)
            }
            return URL(fileURLWithPath: argument).standardizedFileURL.path
        }
        for prefix in ["flatpak:", "snap:"] where argument.hasPrefix(prefix) {
            return String(argument.dropFirst(prefix.count))
        }
        return argument
    }
}

/// The program registry the verbs work on: keychaind's (which checks that the caller is the admin tool and has
/// given the passcode), or the registry file of the keychain opened in this process.
struct ProgramRegistry {
    let keychain: KeychainStore

    static func current() throws(ToolFailure) -> ProgramRegistry {
        ProgramRegistry(keychain: try ToolContext.keychain())
    }

    /// Adds `entry`, replacing any registration of the same program.
    func register(_ entry: KeychainStore.RegisteredProgram, function: String) throws(ToolFailure) {
        do {
            try keychain.register(entry)
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// Every registration, in the registry's order.
    func entries(function: String) throws(ToolFailure) -> [KeychainStore.RegisteredProgram] {
        do {
            return try keychain.registeredPrograms()
        } catch {
            throw ToolFailure(function, error)
        }
    }

    /// Removes the registrations of the program named `name`; returns how many there were.
    func remove(_ name: String, function: String) throws(ToolFailure) -> Int {
        do {
            return try keychain.unregisterProgram(named: name)
        } catch {
            throw ToolFailure(function, error)
        }
    }
}

extension KeychainStore.RegisteredProgram.Program {
    /// The program as `security app list` and `security app consents` print it: an executable's path,
    /// `flatpak:APPID` or `snap:NAME`.
    var name: String {
        switch self {
        case .executable(let path, _): path
        case .flatpak(let id): "flatpak:\(id)"
        case .snap(let name): "snap:\(name)"
        }
    }
}

extension KeychainStore.RegisteredProgram {
    /// The program as `security app list` prints it.
    var programName: String { program.name }

    /// The registration's `security app list` line (without the newline).
    var listLine: String {
        var fields = [programName]
        if case .executable(_, let sha256) = program { fields.append("sha256=\(sha256.prefix(12))") }
        if !accessGroups.isEmpty { fields.append("groups=\(accessGroups.joined(separator: ","))") }
        if let applicationIdentifier { fields.append("app-id=\(applicationIdentifier)") }
        return fields.joined(separator: "  ")
    }
}
