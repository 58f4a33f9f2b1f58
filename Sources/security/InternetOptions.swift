import ArgumentParser
import Foundation
import KeychainKit

/// The attribute filters `find-internet-password` and `delete-internet-password` share (macOS's flags).
struct InternetMatchOptions: ParsableArguments {
    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Match \"account\" string.", valueName: "account"))
    var account: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: ArgumentHelp("Match \"creator\" (four-character code).", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("C"), parsing: .unconditional, help: ArgumentHelp("Match \"type\" (four-character code).", valueName: "type"))
    var type: FourCharCode?

    @Option(name: .customShort("d"), parsing: .unconditional, help: ArgumentHelp("Match \"securityDomain\" string.", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Match \"kind\" string.", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Match \"comment\" string.", valueName: "comment"))
    var comment: String?

    @Option(name: .customShort("l"), parsing: .unconditional, help: ArgumentHelp("Match \"label\" string.", valueName: "label"))
    var label: String?

    @Option(name: .customShort("p"), parsing: .unconditional, help: ArgumentHelp("Match \"path\" string.", valueName: "path"))
    var path: String?

    @Option(name: .customShort("P"), parsing: .unconditional, help: ArgumentHelp("Match port number.", valueName: "port"))
    var port: UInt16?

    @Option(name: .customShort("r"), parsing: .unconditional, help: ArgumentHelp("Match \"protocol\" (four-character code, e.g. \"htps\").", valueName: "protocol"))
    var `protocol`: FourCharCode?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Match \"server\" string.", valueName: "server"))
    var server: String?

    @Option(name: .customShort("t"), parsing: .unconditional, help: ArgumentHelp("Match \"authenticationType\" (four-character code).", valueName: "authenticationType"))
    var authenticationType: FourCharCode?

    var given: InternetPasswordAttributes {
        InternetPasswordAttributes(account: account, server: server, label: label, comment: comment, kind: kind,
                                   securityDomain: securityDomain, path: path, port: port, protocol: `protocol`,
                                   authenticationType: authenticationType, creator: creator, type: type)
    }
}
