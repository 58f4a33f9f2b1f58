import Foundation

/// What a backup contained.
package struct BackupSummary: Sendable, Hashable {
    /// Items written to the backup.
    package var items = 0
    /// Of those, ThisDeviceOnly items, whose secrets only this machine can open.
    package var thisDeviceOnly = 0
    /// WhenPasscodeSetThisDeviceOnly items, never backed up.
    package var skippedPasscodeOnly = 0

    package init(items: Int = 0, thisDeviceOnly: Int = 0, skippedPasscodeOnly: Int = 0) {
        self.items = items
        self.thisDeviceOnly = thisDeviceOnly
        self.skippedPasscodeOnly = skippedPasscodeOnly
    }
}

/// What a restore did.
package struct RestoreSummary: Sendable, Hashable {
    /// Items the keychain did not have.
    package var added = 0
    /// Items replaced because the backup's copy was newer.
    package var replaced = 0
    /// Items kept because this keychain's copy was as new or newer.
    package var keptNewer = 0
    /// ThisDeviceOnly items skipped because they belong to another machine.
    package var skippedOtherDevice = 0

    package init(added: Int = 0, replaced: Int = 0, keptNewer: Int = 0, skippedOtherDevice: Int = 0) {
        self.added = added
        self.replaced = replaced
        self.keptNewer = keptNewer
        self.skippedOtherDevice = skippedOtherDevice
    }
}
