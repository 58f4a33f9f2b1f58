import Crypto
import Foundation

/// The remembered answers to "allow PROGRAM to use SUBJECT?" (``ConsentDecision``), kept in `apps.consents` in the
/// keychain folder and protected as the program registry (`apps.registry`) is.
///
/// File, version 1: `"KCAC" | u8 version = 1 | AES-256-GCM sealed PlistCoding array of decisions` (the header is the
/// AAD). The key is derived (HKDF-SHA256, its own salt and info) from the AfterFirstUnlockThisDeviceOnly class key,
/// which a passcode protects when one is set. A program of the same user that can write the file still cannot
/// produce one the keychain accepts, so it cannot grant itself `always` or erase a single `deny`: without the
/// key, the best it can do is damage or remove the whole file, which the keychain treats as *no decisions* (every
/// program is asked again, see ``KeychainEngine/rememberedConsent(for:subject:)``), never as a grant. The other
/// sealed files cannot be passed off as this one: their magic differs and is authenticated, and their keys are
/// derived with other labels. A copied file is useless on another machine.
///
/// Not defended: putting back an *older* copy of this same keychain's file (a rollback), which brings back the
/// decisions it held, as for the program registry.
package struct ConsentRegistry: Sendable, Hashable {
    /// The decisions, in the order they were made (a decision made again moves to the end).
    package var decisions: [ConsentDecision] = []

    /// How many decisions the file may hold: remembering one more is refused with a clear error until some are
    /// revoked (`security app revoke`).
    package static let maximumDecisions = 4_096

    /// A registry holding `decisions` (none by default), in the order they were made.
    package init(decisions: [ConsentDecision] = []) { self.decisions = decisions }

    static let magic = Array("KCAC".utf8)
    static let version: UInt8 = 1

    /// The decision remembered for exactly `program` (same path *and* SHA-256, app ID or snap name) and `subject`.
    package func decision(for program: AppRegistration.Program, subject: String) -> ConsentDecision? {
        decisions.last { $0.concerns(program, subject: subject) }
    }

    /// Remembers `decision`, replacing the one for the same program and subject. Throws `errSecParam` when
    /// ``maximumDecisions`` are already remembered and this one is new.
    package mutating func remember(_ decision: ConsentDecision) throws(KeychainError) {
        decisions.removeAll { $0.concerns(decision.program, subject: decision.subject) }
        guard decisions.count < ConsentRegistry.maximumDecisions else {
            throw KeychainError(
                code: .invalidParameter,
                message:
                    "The keychain already remembers \(ConsentRegistry.maximumDecisions) decisions to allow or deny programs, its limit, so this one is not remembered. List them with `security app consents` and revoke those no longer needed with `security app revoke PROGRAM`."
            )
        }
        decisions.append(decision)
    }

    /// Forgets the decisions for the program `name` names (an executable's path whatever its SHA-256, a Flatpak app
    /// ID or a snap name), only those about `subject` when given; returns how many were forgotten.
    @discardableResult
    package mutating func revoke(named name: String, subject: String? = nil) -> Int {
        let before = decisions.count
        decisions.removeAll { $0.programIsNamed(name) && (subject == nil || $0.subject == subject) }
        return before - decisions.count
    }

    /// The file's key, derived from the AfterFirstUnlockThisDeviceOnly class key.
    package static func key(classKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: classKey, salt: Array("swift-keychain app consents".utf8),
            info: Array("apps.consents v1".utf8), outputByteCount: 32)
    }

    /// The file's bytes: the header, then the decisions sealed under `key` (from ``key(classKey:)``) with a nonce
    /// from `random`.
    package func encode(key: SymmetricKey, random: any RandomSource) throws(KeychainError) -> [UInt8] {
        let header = ConsentRegistry.magic + [ConsentRegistry.version]
        let body = PlistCoding.encode(.array(decisions.map(\.plist)))
        return header + (try Seal.seal(body, key: key, aad: header, random: random))
    }

    /// The error for a file that does not open: not written by this keychain, edited, or damaged.
    package static let damaged = KeychainError(
        code: .corruptData,
        message:
            "apps.consents was not written by this keychain or was changed since (edited, damaged, or sealed under another keychain's key). Its decisions are ignored: every program is asked again, and the next decision someone makes replaces the file. To start afresh now, remove apps.consents from the keychain folder."
    )

    /// Reads a file written by ``encode(key:random:)`` under `key`. Anything else — another magic or version, a
    /// seal that does not open under `key` (edited, truncated, sealed under another key), a body that is not a list
    /// of decisions, or more than ``maximumDecisions`` — throws ``damaged`` (`errSecDecode`).
    package static func decode(_ bytes: Data, key: SymmetricKey) throws(KeychainError) -> ConsentRegistry {
        let header = magic + [version]
        guard bytes.count > header.count, Array(bytes.prefix(header.count)) == header else { throw damaged }
        let plain: [UInt8]
        do {
            plain = try Seal.open(Array(bytes.dropFirst(header.count)), key: key, aad: header)
        } catch {
            throw damaged
        }
        let value: PlistValue
        do {
            value = try PlistCoding.decode(plain)
        } catch {
            throw damaged
        }
        guard case .array(let list) = value, list.count <= maximumDecisions else { throw damaged }
        var registry = ConsentRegistry()
        for item in list {
            guard let decision = ConsentDecision(plist: item) else { throw damaged }
            registry.decisions.append(decision)
        }
        return registry
    }
}

extension KeychainLocation {
    /// The remembered answers to "allow PROGRAM to use SUBJECT?".
    package var consentsPath: String { home + "/apps.consents" }
}
