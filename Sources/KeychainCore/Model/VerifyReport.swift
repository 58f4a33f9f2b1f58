/// What a check of every stored item found: how many rows were read and which could not be (never their secrets).
package struct VerifyReport: Sendable, Hashable {
    /// One stored item that cannot be read.
    package struct DamagedItem: Sendable, Hashable {
        /// The item's class.
        package var itemClass: ItemClass
        /// The row's id in its class's table.
        package var rowid: Int64
        /// What is wrong, in words (never the item's contents).
        package var problem: String

        package init(itemClass: ItemClass, rowid: Int64, problem: String) {
            self.itemClass = itemClass
            self.rowid = rowid
            self.problem = problem
        }
    }

    /// Rows read, damaged ones included.
    package var checked: Int
    /// The rows that could not be read.
    package var damaged: [DamagedItem]

    package init(checked: Int, damaged: [DamagedItem]) {
        self.checked = checked
        self.damaged = damaged
    }
}
