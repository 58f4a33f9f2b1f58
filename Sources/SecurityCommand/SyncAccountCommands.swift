import ArgumentParser
import Foundation
import KeychainKit

/// `security sync`: end-to-end-encrypted sync of the keychain's synchronizable items through a sync server.
struct SyncToolCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync the keychain's synchronizable items between your machines.",
        discussion: """
            Items added as synchronizable (kSecAttrSynchronizable: `security add-generic-password --sync`, \
            `security sync items add` for existing ones, KeychainKit's synchronizable(true)) whose accessibility may \
            leave the machine are \
            sealed on this machine and sent to a keychain-sync-server, which stores only ciphertext; the machines of \
            the account open them. The first machine makes the account (create-account); for each other machine a \
            machine of the account makes a one-time invitation (invite), with which the new machine asks to join \
            (join --invitation), shows a code, and is approved on a machine of the account (approve CODE, or reject \
            CODE; pending lists them); join again then completes it. keychaind syncs in the background while it runs; without keychaind, `now` syncs once. \
            The verbs go through keychaind when it serves the keychain (it accepts all but `status` only from the \
            security installed beside it, after the keychain's passcode when one is set: you are asked on the \
            terminal). A failure prints "security: sync VERB: <message>" and exits with its OSStatus's low byte: \
            44 when the keychain is in no account (or no device matches), 206 (errSecParam) for a malformed \
            argument, 3 when this machine was removed from its account (join again to sync: that makes a new \
            device key).
            """,
        subcommands: [
            SyncCreateAccount.self, SyncJoin.self, SyncApprove.self, SyncDevices.self, SyncRemoveDevice.self,
            SyncStatusCommand.self, SyncNow.self, SyncItems.self, SyncDefault.self, SyncInvite.self, SyncPending.self, SyncReject.self,
        ]
    )

    /// A sync call's failure, with the engine's message even for the codes other verbs print bare (no account:
    /// it says to run create-account or join).
    static func failure(_ function: String, _ error: KeychainError) -> ToolFailure {
        var failure = ToolFailure(function, status: error.status, detail: error.message)
        failure.fromKeychain = true
        if error.code == .syncDeviceRemoved { failure.exitStatus = removedExitStatus }
        return failure
    }

    /// The exit status of a verb run on a machine removed from its account.
    static let removedExitStatus: Int32 = 3

    /// `rows` as columns two spaces apart at least, each line without trailing spaces.
    static func table(_ rows: [[String]]) -> String {
        var widths = [Int](repeating: 0, count: rows.map(\.count).max() ?? 0)
        for row in rows { for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) } }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }.joined()
    }

    /// The admin tool's store, its failure named after `function`.
    static func store(_ function: String) throws(ToolFailure) -> KeychainStore {
        try ToolContext.keychain(function: function)
    }

    /// `text` as a sync server's address: an http or https URL with a host.
    static func server(_ text: String, function: String) throws(ToolFailure) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.host?.isEmpty == false
        else {
            throw ToolFailure(
                function, status: .param,
                detail: "'\(text.prefix(200))' is not a sync server's address: give an https (or http) URL, like https://sync.example.com.")
        }
        return url
    }
}

/// `security sync create-account`: makes a new sync account with this machine as its first device.
struct SyncCreateAccount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-account",
        abstract: "Make a new sync account with this machine as its first device.",
        discussion: """
            Makes this machine's sync keys (kept in the keychain, never synced), creates the account on the server \
            and prints "account: ID" and "server: URL", then the command to run on each other machine: \
            `security sync join --server URL --account ID`. A keychain already in an account exits 45 \
            (errSecDuplicateItem).
            """
    )

    static let function = "sync create-account"

    @Option(help: ArgumentHelp("The sync server's address, like https://sync.example.com.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("This machine's name in the account's device list (default: its host name).", valueName: "name"))
    var name: String?

    @Flag(help: "Read the server operator's account token from standard input (one line), for a server that creates accounts by token only.")
    var accountTokenStdin = false

    func run() async throws {
        let url = try SyncToolCommand.server(server, function: Self.function)
        var token: String?
        if accountTokenStdin {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ToolFailure(Self.function, status: .param, detail: "--account-token-stdin reads the token from standard input: give it as one line.")
            }
            token = line
        }
        let store = try SyncToolCommand.store(Self.function)
        let account: String
        do {
            account = try await store.createSyncAccount(server: url, deviceName: name ?? KeychainStore.defaultSyncDeviceName, accountToken: token)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(
            """
            account: \(account)
            server: \(url.absoluteString)
            To add another machine, run `security sync invite` here and `security sync join --invitation URI` there.

            """)
    }
}

/// `security sync join`: asks to join an account, and completes the join once approved.
struct SyncJoin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Ask to join a sync account with an invitation; run again once approved to finish joining.",
        discussion: """
            The first run needs an invitation from a machine of the account (`security sync invite` there): the URI \
            it printed (--invitation URI), or its code with --server and --account. It sends this machine's \
            public keys to the server and prints "join: waiting for approval", \
            "code: XXXXX-XXXXX" and "fingerprint: …": run `security sync approve XXXXX-XXXXX` on a machine of the \
            account, check that it prints the same fingerprint, then run this command again. Once approved it \
            prints "join: joined account ID", runs the first round (its progress shown on a terminal) and prints \
            what it did as `security sync now` does; the machine then syncs. Exits 0 in both cases. A machine \
            removed from its account asks afresh, with a new device key.
            """
    )

    static let function = "sync join"

    @Option(help: ArgumentHelp("The sync server's address (or give the invitation's URI).", valueName: "url"))
    var server: String?

    @Option(help: ArgumentHelp("The account's identifier (or give the invitation's URI).", valueName: "id"))
    var account: String?

    @Option(
        help: ArgumentHelp(
            "The invitation `security sync invite` printed on a machine of the account: its URI, or its code (XXXX-XXXX-XXXX) with --server and --account. One-time, 15 minutes; not needed to run join again.",
            valueName: "uri|code"))
    var invitation: String?

    func validate() throws {
        if invitation?.hasPrefix("keychain-sync:") != true, server == nil || account == nil {
            throw ValidationError("Give the invitation's URI (--invitation keychain-sync://join?…), or --server and --account.")
        }
    }

    func run() async throws {
        var server = self.server
        var named = self.account
        var code = invitation
        if let invitation, invitation.hasPrefix("keychain-sync:") {
            do throws(KeychainError) {
                let parsed = try KeychainStore.syncInvitation(fromURI: invitation)
                server = server ?? parsed.server.absoluteString
                named = named ?? parsed.account
                code = parsed.code
            } catch {
                throw SyncToolCommand.failure(Self.function, error)
            }
        }
        let url = try SyncToolCommand.server(server ?? "", function: Self.function)
        let account = named ?? ""
        let store = try SyncToolCommand.store(Self.function)
        let state: KeychainStore.SyncJoinState
        do {
            state = try await store.joinSyncAccount(account, server: url, invitation: code)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        switch state {
        case .pending(let code, let fingerprint):
            Output.standardOutput(
                """
                join: waiting for approval
                code: \(code)
                fingerprint: \(fingerprint)
                On a machine of the account run `security sync approve \(code)` and check that it prints this fingerprint; then run `security sync join --server \(url.absoluteString) --account \(account)` here again.

                """)
        case .joined(let account):
            Output.standardOutput("join: joined account \(account)\n")
            // The first round brings the account's items (with progress on a terminal): the machine is ready
            // when the command returns.
            let round = try await SyncNow.round(store, function: Self.function)
            Output.standardOutput(SyncNow.report(round))
        }
    }
}

/// `security sync approve`: approves a machine asking to join, by the code it shows.
struct SyncApprove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Approve a machine asking to join the account, by the code it shows.",
        discussion: """
            Finds the request whose keys give CODE (ten letters and digits, as XXXXX-XXXXX; case and the dash do \
            not matter), adds that machine to the account's signed device list and gives it the account's key. \
            Prints "approved: NAME" and "fingerprint: …": check that the new machine printed the same fingerprint; \
            if not, remove it with `security sync remove-device ID` (`security sync devices` lists it). A malformed \
            code exits 206 (errSecParam); no request with the code, or no account, exits 44.
            """
    )

    static let function = "sync approve"

    @Argument(help: ArgumentHelp("The code the new machine printed (XXXXX-XXXXX).", valueName: "code"))
    var code: String

    @Option(help: ArgumentHelp("The new machine's name in the device list (default: this machine's host name).", valueName: "name"))
    var name: String?

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let deviceName = name ?? KeychainStore.defaultSyncDeviceName
        let fingerprint: String
        do {
            fingerprint = try await store.approveSyncDevice(code: code, name: deviceName)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(
            """
            approved: \(deviceName)
            fingerprint: \(fingerprint)
            Check that the new machine printed this fingerprint; if it did not, remove it with `security sync remove-device ID` (`security sync devices` lists it).

            """)
    }
}

/// `security sync devices`: the account's trusted machines, as a table.
struct SyncDevices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the account's trusted machines.",
        discussion: """
            Prints a table with a header line: ID (what remove-device takes), NAME, ADDED (UTC, ISO 8601), \
            FINGERPRINT, and "this device" at the end of this machine's line. Columns are separated by two spaces \
            at least; control characters in names are shown as \\u{…} escapes. No account exits 44.
            """
    )

    static let function = "sync devices"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let devices: [KeychainStore.SyncDevice]
        do {
            devices = try await store.syncDevices()
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(Self.table(devices))
    }

    /// The table: a header, then one line per device, oldest first.
    static func table(_ devices: [KeychainStore.SyncDevice]) -> String {
        SyncToolCommand.table(
            [["ID", "NAME", "ADDED", "FINGERPRINT", ""]]
                + devices.sorted { ($0.added, $0.id) < ($1.added, $1.id) }.map {
                    // Names come from the account's device list, which other machines write: control characters are escaped.
                    [printable($0.id), printable($0.name), $0.added.formatted(.iso8601), printable($0.fingerprint), $0.isThisDevice ? "this device" : ""]
                })
    }
}

/// `security sync remove-device`: removes a machine from the account.
struct SyncRemoveDevice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove-device",
        abstract: "Remove a machine from the account.",
        discussion: """
            Signs a device list without the machine (ID as `security sync devices` prints it) and makes a new \
            account key for the machines that remain: the removed machine cannot open anything written afterwards \
            (it keeps what it already has). Prints "removed: ID". An unknown ID, or no account, exits 44.
            """
    )

    static let function = "sync remove-device"

    @Argument(help: ArgumentHelp("The machine's device ID.", valueName: "id"))
    var id: String

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        do {
            try await store.removeSyncDevice(id: id)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput("removed: \(id)\n")
    }
}

/// `security sync invite`: a one-time invitation for another machine.
struct SyncInvite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Make a one-time invitation for another machine to join the account.",
        discussion: """
            Prints "invitation: XXXX-XXXX-XXXX", "expires:" (UTC, ISO 8601: 15 minutes from now), "uri:" (the \
            invitation with the server and the account, short enough for a QR code, e.g. `qrencode -t ansiutf8 URI`) \
            and the command to run on the new machine. The server admits one join request that carries it, and none \
            without one; the new machine is then approved with `security sync approve CODE` as before. No account \
            exits 44.
            """
    )

    static let function = "sync invite"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let invitation: KeychainStore.SyncInvitation
        do {
            invitation = try await store.createSyncInvitation()
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(
            """
            invitation: \(invitation.code)
            expires: \(invitation.expires.formatted(.iso8601))
            uri: \(invitation.uri)
            On the new machine run: security sync join --invitation '\(invitation.uri)'

            """)
    }
}

/// `security sync pending`: the machines waiting to join.
struct SyncPending: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending",
        abstract: "List the machines waiting to join the account.",
        discussion: """
            Prints a table with a header line: ID, CODE (what approve and reject take), REQUESTED (UTC, ISO 8601) and \
            FINGERPRINT, oldest first; nothing after the header when none waits. No account exits 44.
            """
    )

    static let function = "sync pending"

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        let devices: [KeychainStore.SyncPendingDevice]
        do {
            devices = try await store.pendingSyncDevices()
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput(
            SyncToolCommand.table(
                [["ID", "CODE", "REQUESTED", "FINGERPRINT"]]
                    + devices.map { [printable($0.id), printable($0.code), $0.requested.formatted(.iso8601), printable($0.fingerprint)] }))
    }
}

/// `security sync reject`: refuses a machine waiting to join.
struct SyncReject: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reject",
        abstract: "Reject a machine waiting to join the account.",
        discussion: """
            Takes the machine's ID or the code it shows (as `security sync pending` lists them). The machine can \
            never join with that device key. Prints "rejected: ID"; no such machine, or no account, exits 44.
            """
    )

    static let function = "sync reject"

    @Argument(help: ArgumentHelp("The waiting machine's ID or code.", valueName: "id|code"))
    var device: String

    func run() async throws {
        let store = try SyncToolCommand.store(Self.function)
        do {
            try await store.rejectSyncDevice(device)
        } catch {
            throw SyncToolCommand.failure(Self.function, error)
        }
        Output.standardOutput("rejected: \(printable(device))\n")
    }
}
