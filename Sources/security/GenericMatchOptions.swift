import ArgumentParser
import Foundation
import KeychainKit

/// The attribute filters `find-generic-password` and `delete-generic-password` share (macOS's flags).
struct GenericMatchOptions: ParsableArguments {
    @Option(name: .customShort("a"), parsing: .unconditional, help: ArgumentHelp("Match \"account\" string.", valueName: "account"))
    var account: String?

    @Option(name: .customShort("c"), parsing: .unconditional, help: ArgumentHelp("Match \"creator\" (four-character code).", valueName: "creator"))
    var creator: FourCharCode?

    @Option(name: .customShort("C"), parsing: .unconditional, help: ArgumentHelp("Match \"type\" (four-character code).", valueName: "type"))
    var type: FourCharCode?

    @Option(name: .customShort("D"), parsing: .unconditional, help: ArgumentHelp("Match \"kind\" string.", valueName: "kind"))
    var kind: String?

    @Option(name: .customShort("G"), parsing: .unconditional, help: ArgumentHelp("Match \"value\" string (generic attribute).", valueName: "value"))
    var generic: String?

    @Option(name: .customShort("j"), parsing: .unconditional, help: ArgumentHelp("Match \"comment\" string.", valueName: "comment"))
    var comment: String?

    @Option(name: .customShort("l"), parsing: .unconditional, help: ArgumentHelp("Match \"label\" string.", valueName: "label"))
    var label: String?

    @Option(name: .customShort("s"), parsing: .unconditional, help: ArgumentHelp("Match \"service\" string.", valueName: "service"))
    var service: String?

    /// The attributes given on the command line.
    var given: GenericPasswordAttributes {
        GenericPasswordAttributes(account: account, service: service, label: label, comment: comment,
                                  kind: kind, generic: generic, creator: creator, type: type)
    }
}
