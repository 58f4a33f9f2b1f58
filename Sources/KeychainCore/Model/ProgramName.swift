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

    /// The app ID in the process's sandbox's `.flatpak-info` (`[Application]`, `name=`), or nil. This is how a
    /// program names itself in its own process; keychaind believes a `.flatpak-info` only from a verified sandbox.
    package static func flatpakAppID(processFolder base: String) -> String? {
        guard let data = try? FileSystem.read("\(base)/root/.flatpak-info") else { return nil }
        return flatpakInfo(data)?.appID
    }

    /// The fields of a `.flatpak-info` keychaind uses: `[Application] name=` and `[Instance] instance-id=`; nil
    /// when the bytes are not UTF-8.
    package static func flatpakInfo(_ data: Data) -> (appID: String?, instanceID: String?)? {
        guard let text = String(data: data, encoding: .utf8) else { return nil }
        var section = ""
        var app: String?
        var instance: String?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                section = line
            } else if section == "[Application]", app == nil, line.hasPrefix("name=") {
                app = String(line.dropFirst(5))
            } else if section == "[Instance]", instance == nil, line.hasPrefix("instance-id=") {
                instance = String(line.dropFirst(12))
            }
        }
        return (app.flatMap { $0.isEmpty ? nil : $0 }, instance)
    }

    /// The snap's name from the AppArmor label `snap.NAME.APP (enforce)` that snapd's profile gives the process.
    /// A cgroup name proves nothing: any program of the user makes a `snap.NAME.…` scope with
    /// `systemd-run --user --scope`.
    package static func snapName(processFolder base: String) -> String? {
        guard let data = try? FileSystem.read("\(base)/attr/current"), let text = String(data: data, encoding: .utf8),
            let label = text.split(separator: " ").first
        else { return nil }
        let parts = label.split(separator: ".")
        guard parts.count >= 3, parts[0] == "snap", !parts[1].isEmpty else { return nil }
        return String(parts[1])
    }
}
