import Foundation

extension KeychainEngine {
    /// Moves the items of an old private group to the program's group of today, once per old group and engine.
    ///
    /// Before swift-keychain 0.30 a program that opened the keychain in its own process got its executable's *name*
    /// as its private group, while keychaind gave it the executable's full path; now both give the path (or the
    /// Flatpak app ID, `snap.NAME`). A program's items stored under the old name move to its group of today the
    /// first time the program asks, in process or through keychaind, so it finds them again whichever way it
    /// reaches the keychain. Items that cannot be moved now (the keychain is locked) are tried again at the next
    /// call. Items of programs that shared a name (two `tool`s in different folders) went to one group before, and
    /// go to whichever of them asks first.
    ///
    /// - Parameters:
    ///   - legacy: The old group: the executable's name.
    ///   - group: The program's group now: its executable's full path.
    package func adoptLegacyPrivateGroup(_ legacy: String, as group: String) {
        guard legacy != group, !legacy.isEmpty, !legacy.contains("/"),
            legacyGroupsChecked.withLock({ $0.insert(legacy).inserted })
        else { return }
        let caller = AccessPolicy(groups: [group, legacy])
        var moved = 0
        for itemClass in [ItemClass.genericPassword, .internetPassword, .certificate, .key] {
            var query = ItemQuery(itemClass: itemClass)
            query.attributes["agrp"] = .string(legacy)
            query.sync = .any
            query.authentication.ui = .skip
            do {
                let found = try find(query.limitedToAll(), caller: caller).count
                guard found > 0 else { continue }
                try update(query, attributes: ["agrp": .string(group)], sync: nil, data: nil, caller: caller)
                moved += found
            } catch  where error.code == .itemNotFound {
                continue
            } catch {
                // Locked, or busy: look again at the next call.
                _ = legacyGroupsChecked.withLock { $0.remove(legacy) }
                logger.notice("items of an old private group not moved yet", metadata: ["reason": "\(error.code)"])
                return
            }
        }
        if moved > 0 {
            logger.notice("moved items of an old private group to the program's path", metadata: ["count": "\(moved)"])
        }
    }
}

extension ItemQuery {
    /// The same query, matching every item (`kSecMatchLimitAll`) and returning only persistent references.
    func limitedToAll() -> ItemQuery {
        var query = self
        query.limit = .all
        query.returns = ReturnOptions()
        query.returns.persistentRef = true
        return query
    }
}
