import Foundation

/// How a process's program is named, from what `/proc` says of it: a Flatpak app by its app ID, a snap by its name,
/// anything else by its executable's full path. keychaind names its clients this way, and a program that opens the
/// keychain in its own process names itself the same way, so it has the same private access group in both modes.
package enum ProgramName {
    /// The access group a program that is not registered gets: its Flatpak app ID, `snap.NAME`, or its executable's
    /// path (`exe`, as `/proc/PID/exe` gives it).
    package static func privateGroup(processFolder base: String, executable exe: String) -> String {
        if let app = flatpakAppID(processFolder: base) { return app }
        if let snap = snapName(processFolder: base) { return "snap.\(snap)" }
        return exe
    }

    /// This process's private group (see ``privateGroup(processFolder:executable:)``), read once.
    package static let ownPrivateGroup: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).flatMap { $0.isEmpty ? nil : $0 }
        return privateGroup(processFolder: "/proc/self", executable: exe ?? AccessPolicy.currentExecutableName())
    }()

    /// The app ID in the process's sandbox's `.flatpak-info` (`[Application]`, `name=`), or nil.
    package static func flatpakAppID(processFolder base: String) -> String? {
        guard let data = try? FileSystem.read("\(base)/root/.flatpak-info"), let text = String(data: data, encoding: .utf8) else {
            return nil
        }
        var inApplication = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                inApplication = line == "[Application]"
            } else if inApplication, line.hasPrefix("name=") {
                let id = String(line.dropFirst(5))
                return id.isEmpty ? nil : id
            }
        }
        return nil
    }

    /// The snap's name from the AppArmor label `snap.NAME.APP (enforce)`, else from a `snap.NAME.…` cgroup.
    package static func snapName(processFolder base: String) -> String? {
        func name(fromLabel label: Substring) -> String? {
            let parts = label.split(separator: ".")
            guard parts.count >= 3, parts[0] == "snap", !parts[1].isEmpty else { return nil }
            return String(parts[1])
        }
        if let data = try? FileSystem.read("\(base)/attr/current"), let text = String(data: data, encoding: .utf8),
           let label = text.split(separator: " ").first, let snap = name(fromLabel: label) {
            return snap
        }
        if let data = try? FileSystem.read("\(base)/cgroup"), let text = String(data: data, encoding: .utf8) {
            for component in text.split(whereSeparator: { $0 == "/" || $0.isNewline }) where component.hasPrefix("snap.") {
                if let snap = name(fromLabel: component) { return snap }
            }
        }
        return nil
    }
}
