import Foundation
import KeychainCore
import KeychainTestSupport
import Testing
@testable import KeychainProtocol

/// The wire format, fixed by golden vectors: a change to these bytes is a protocol change (bump
/// ``Frame/version``), never an accident.
@Suite struct FrameGoldenTests {
    static var query: ItemQuery {
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes = ["acct": .string("alice"), "svce": .string("example.com")]
        q.returns.data = true
        q.hasReturnKeys = true
        return q
    }

    static let findRequest = Frame(id: 7, body: .request(.find(query, claim: ["TEAM.app"])))

    static let context = AuthenticationContextID(bytes: Data(repeating: 0xC7, count: 16))!
    static var authentication: AuthenticationOptions {
        var options = AuthenticationOptions()
        options.ui = .allow
        options.operationPrompt = "Sign in 50% faster\r\n"
        options.apply(
            AuthenticationContextValue(
                id: context, localizedReason: "reason", interactionNotAllowed: false,
                reuseDuration: 30, applicationPassword: Data("pw".utf8)))
        return options
    }
    static var authenticatedQuery: ItemQuery {
        var q = query
        q.authentication = authentication
        return q
    }
    static var requirement: PresenceRequirement {
        get throws {
            PresenceRequirement(
                item: PersistentReference(itemClass: .genericPassword, uuid: Data(repeating: 0xAB, count: 16)),
                itemDescription: "bank", operation: .decrypt,
                accessControl: try AccessControl(protection: .whenUnlocked, flags: [.devicePasscode, .biometryAny, .or]))
        }
    }
    static var newItemRequirement: PresenceRequirement {
        get throws {
            PresenceRequirement(
                item: nil, itemDescription: "new", operation: .decrypt,
                accessControl: try AccessControl(protection: .whenUnlocked, flags: .applicationPassword))
        }
    }
    static var presenceNeeded: KeychainError {
        get throws {
            var error = KeychainError(code: .authenticationNeeded, message: "needs")
            error.presenceNeeded = [try requirement, try newItemRequirement]
            return error
        }
    }
    static var presenceFrame: Frame { get throws { Frame(id: 11, body: .response(.failure(try presenceNeeded))) } }
    static var authenticateFrame: Frame { get throws { Frame(id: 12, body: .request(.authenticate(try requirement, authentication))) } }

    static var foundItem: FoundItem {
        FoundItem(
            itemClass: .genericPassword, uuid: Data(repeating: 0xAB, count: 16),
            attributes: ["acct": .string("alice"), "cdat": .date(Date(timeIntervalSinceReferenceDate: 1_000_000)), "port": .int(-443)],
            data: Data("s3cret".utf8))
    }

    static let itemsResponse = Frame(id: 7, body: .response(.items([foundItem])))
    static let failureResponse = Frame(id: 8, body: .response(.failure(KeychainError(code: .itemNotFound, message: "none"))))
    static let unlockRequest = Frame(id: 9, body: .request(.unlock(passcode: "1234")))
    static let refusal = Frame(id: 10, body: .versionRefused(supported: 3, message: "upgrade"))

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func unhex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            out.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return out
    }

    static let goldenFind = "0000004c030100000007020467656e700000000204616363740100000005616c6963650473766365010000000b6578616d706c652e636f6d000001000000020100000001000000085445414d2e617070"
    static let goldenItems =
        "0000006003020000000702000000010467656e7000000010abababababababababababababababab0000000304616363740100000005616c696365046364617405412e84800000000004706f727403fffffffffffffe4501000000067333637265740000"
    static let goldenFailure = "00000023030200000008ffffff9d2c0000000c6974656d4e6f74466f756e64000000046e6f6e65"
    static let goldenUnlock = "0000000f0301000000090c0000000431323334"
    static let goldenRefusal = "0000001203030000000a030000000775706772616465"

    /// The greeting keychaind sends each client it has identified, before anything else.
    static let goldenGreeting = "0000000703020000000000"

    static let goldenPresenceNeeded =
        "0000007903020000000bfeffff9d0e0000001461757468656e7469636174696f6e4e6565646564000000056e6565647300000002010000001467656e70abababababababababababababababab0000000462616e6b010000000b010000000000004012616b00000000036e6577010000000b010000000080000000616b"
    static let goldenAuthenticate =
        "0000008303010000000c16010000001467656e70abababababababababababababababab0000000462616e6b010000000b010000000000004012616b0001000000145369676e20696e20353025206661737465720d0a0100000010c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7403e000000000000010000000270770100000006726561736f6e0000"

    /// User presence on the wire: the failure that asks for proofs, and the request that obtains one.
    @Test func presenceFramesEncodeToTheirGoldenBytes() throws {
        #expect(Self.hex(try Self.presenceFrame.encoded) == Self.goldenPresenceNeeded)
        #expect(Self.hex(try Self.authenticateFrame.encoded) == Self.goldenAuthenticate)
        let failure = try Frame.decode(body: Self.unhex(Self.goldenPresenceNeeded).dropFirst(4))
        guard case .response(.failure(let error)) = failure.body else { Issue.record("not a failure"); return }
        #expect(error.status == .authNeeded)
        #expect(error.presenceNeeded == [try Self.requirement, try Self.newItemRequirement])
        let request = try Frame.decode(body: Self.unhex(Self.goldenAuthenticate).dropFirst(4))
        guard case .request(.authenticate(let requirement, let options)) = request.body else { Issue.record("not authenticate"); return }
        #expect(requirement == (try Self.requirement))
        #expect(options == Self.authentication)
        // A query without authentication options keeps its bytes (the find golden above); one with them differs.
        #expect(Frame(id: 7, body: .request(.find(Self.authenticatedQuery, claim: ["TEAM.app"]))).encoded != Self.findRequest.encoded)
    }

    /// A smart card PIN (`LAContext.setCredential(_:type: .smartCardPIN)`) travels with the authentication, last.
    @Test func smartCardPINTravelsWithTheAuthentication() throws {
        var options = Self.authentication
        options.smartCardPIN = Data("123456".utf8)
        var writer = BinaryWriter()
        writer.authentication(options)
        #expect(writer.data.suffix(11) == Data([1, 0, 0, 0, 6]) + Data("123456".utf8))
        var reader = BinaryReader(writer.data)
        #expect(try reader.authentication() == options)
    }

    /// A hostile frame cannot name a context of the wrong length, a negative or infinite reuse, or claim more
    /// requirements than the bytes can hold.
    @Test func malformedAuthenticationIsRefused() throws {
        var w = BinaryWriter()
        w.u8(23); w.bytes(Data(repeating: 1, count: 15))
        var r = BinaryReader(w.data)
        expectKeychainError(.corruptData) { try KeychainRequest.decode(&r) }
        var bad = BinaryWriter()
        bad.u8(22); bad.requirement(try Self.requirement)
        var options = BinaryWriter()
        options.authentication(Self.authentication)
        var bytes = Array(options.data)
        // The reuse duration sits after ui (1), the prompt (1 + 4 + n) and the context (1 + 4 + 16).
        let promptLength = Self.authentication.operationPrompt!.utf8.count
        let reuseAt = 1 + 5 + promptLength + 21
        for (i, b) in Double.infinity.bitPattern.bigEndianBytes.enumerated() { bytes[reuseAt + i] = b }
        var frame = Array(bad.data) + bytes
        var reader = BinaryReader(Data(frame))
        expectKeychainError(.corruptData) { try KeychainRequest.decode(&reader) }
        frame = [254, 0, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0xFF]
        var response = BinaryReader(Data(frame))
        expectKeychainError(.corruptData) { try KeychainResponse.decode(&response) }
    }

    @Test func framesEncodeToTheirGoldenBytes() {
        #expect(Self.hex(Frame.greeting.encoded) == Self.goldenGreeting)
        #expect(Self.hex(Self.findRequest.encoded) == Self.goldenFind)
        #expect(Self.hex(Self.itemsResponse.encoded) == Self.goldenItems)
        #expect(Self.hex(Self.failureResponse.encoded) == Self.goldenFailure)
        #expect(Self.hex(Self.unlockRequest.encoded) == Self.goldenUnlock)
        #expect(Self.hex(Self.refusal.encoded) == Self.goldenRefusal)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        let find = try Frame.decode(body: Self.unhex(Self.goldenFind).dropFirst(4))
        #expect(find.id == 7)
        guard case .request(.find(let query, let claim)) = find.body else { Issue.record("not a find"); return }
        #expect(query == Self.query)
        #expect(claim == ["TEAM.app"])
        let items = try Frame.decode(body: Self.unhex(Self.goldenItems).dropFirst(4))
        guard case .response(.items(let found)) = items.body else { Issue.record("not items"); return }
        #expect(found == [Self.foundItem])
        let failure = try Frame.decode(body: Self.unhex(Self.goldenFailure).dropFirst(4))
        guard case .response(.failure(let error)) = failure.body else { Issue.record("not a failure"); return }
        #expect(error.code == .itemNotFound)
        #expect(error.status == .itemNotFound)
        #expect(error.message == "none")
        for golden in [Self.goldenUnlock, Self.goldenRefusal] {
            #expect(Self.hex(try Frame.decode(body: Self.unhex(golden).dropFirst(4)).encoded) == golden)
        }
    }

    /// Every request and response kind survives the trip.
    @Test func everyMessageKindRoundTrips() throws {
        let reference = PersistentReference(itemClass: .key, uuid: Data(repeating: 3, count: 16))
        var identity = Self.foundItem
        identity.itemClass = .certificate
        identity.identityKey = .init(uuid: Data(repeating: 4, count: 16), attributes: ["kcls": .int(1)], data: nil, tokenPublicKey: Data([4, 1, 2]))
        var limited = Self.query
        limited.limit = .count(5)
        limited.sync = .any
        limited.persistentRef = PersistentReference(itemClass: .genericPassword, uuid: Data(repeating: 9, count: 16))
        limited.hostOrSubdomain = "example.com"
        limited.valueData = Data([1, 2])
        let requests: [KeychainRequest] = [
            .add(limited, claim: nil), .find(limited, claim: []), .update(Self.query, ItemChanges(attributes: ["labl": .double(1.5)], sync: true, data: Data()), claim: ["a", "*"]),
            .delete(Self.query, claim: nil), .tokenKey(.create(Self.query), claim: nil),
            .tokenKey(.sign(reference: reference, algorithm: "alg", input: Data([1])), claim: nil),
            .tokenKey(.decrypt(reference: reference, algorithm: "alg", input: Data([2])), claim: ["g"]),
            .tokenKey(.exchange(reference: reference, algorithm: "alg", peer: Data([4]), requestedSize: 32, sharedInfo: Data([5])), claim: nil),
            .tokenKey(.exchange(reference: reference, algorithm: "alg", peer: Data([4]), requestedSize: nil, sharedInfo: Data()), claim: nil),
            .status, .lock, .unlock(passcode: "p"), .changePasscode(old: nil, new: "n"), .changePasscode(old: "o", new: nil),
            .backup(password: "b"), .restore(Data([9]), password: "r"), .settings, .setSettings(KeychainSettings(idleTimeout: 60, lockOnSleep: true)),
            .setSettings(KeychainSettings()), .setSettings(KeychainSettings(secretServiceUnregistered: "deny")), .setSettings(KeychainSettings(syncNewItems: true)),
            .registerProgram(AppRegistration(program: .executable(path: "/usr/bin/app", sha256: "ab"), applicationIdentifier: "TEAM.app", accessGroups: ["g"])),
            .registerProgram(AppRegistration(program: .flatpak("org.example.App"), applicationIdentifier: nil, accessGroups: [])),
            .registerProgram(AppRegistration(program: .snap("app"), applicationIdentifier: nil, accessGroups: ["s"])),
            .listPrograms, .unregisterProgram("/usr/bin/app"), .listConsents, .revokeConsents("/usr/bin/app", subject: nil),
            .revokeConsents("org.example.App", subject: "/org/freedesktop/secrets/collection/login"),
            .pendingApprovals, .answerPending(id: 1, answer: .once), .answerPending(id: .max, answer: .deny),
            .add(Self.authenticatedQuery, claim: nil), .find(Self.authenticatedQuery, claim: ["g"]),
            .tokenKey(.sign(reference: reference, algorithm: "alg", input: Data([1])), claim: nil, authentication: Self.authentication),
            .backup(password: "b", authentication: Self.authentication),
            .authenticate(try Self.requirement, Self.authentication), .authenticate(try Self.newItemRequirement, AuthenticationOptions()),
            .invalidateContext(Self.context), .resetAuthorizations,
        ]
        for (index, request) in requests.enumerated() {
            let bytes = Frame(id: UInt32(index), body: .request(request)).encoded
            let decoded = try Frame.decode(body: bytes.dropFirst(4))
            guard case .request(let back) = decoded.body else { Issue.record("request \(index) decoded as something else"); continue }
            #expect(back == request, "request \(index)")
            #expect(decoded.id == UInt32(index))
        }
        let status = ServiceStatus(home: "/h", lockState: .locked, daemon: .init(pid: 42, caller: "me", isAdminTool: true, accessGroups: ["*"], transactions: 3, writes: 5, writerNanoseconds: 7))
        let responses: [KeychainResponse] = [
            .done, .item(identity), .items([]), .items([Self.foundItem, identity]), .count(3), .tokenKey(.key(identity)), .tokenKey(.data(Data([7]))),
            .status(status), .status(ServiceStatus(home: "/h", lockState: .noPasscode)), .backup(Data([1, 2]), BackupSummary(items: 3, thisDeviceOnly: 1, skippedPasscodeOnly: 2)),
            .restored(RestoreSummary(added: 1, replaced: 2, keptNewer: 3, skippedOtherDevice: 4)), .settings(nil), .settings(KeychainSettings(idleTimeout: nil, lockOnSleep: true)),
            .programs([AppRegistration(program: .snap("app"), applicationIdentifier: "x", accessGroups: ["s"])]),
            .failure(try Self.presenceNeeded),
            .consents([]), .consents(ConsentMessageTests.decisions),
        ]
        for (index, response) in responses.enumerated() {
            let bytes = Frame(id: 1, body: .response(response)).encoded
            let decoded = try Frame.decode(body: bytes.dropFirst(4))
            guard case .response(let back) = decoded.body else { Issue.record("response \(index) decoded as something else"); continue }
            #expect(Frame(id: 1, body: .response(back)).encoded == bytes, "response \(index)")
        }
    }
}

extension UInt64 {
    var bigEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (56 - 8 * UInt64($0))) } }
}

@Suite struct FrameRuleTests {
    /// A length below the header or above the limit is refused before anything is read or allocated.
    @Test func lengthsOutsideTheRuleAreRefused() throws {
        for length: UInt32 in [0, 5, UInt32(Frame.maximumLength) + 1, .max] {
            #expect { try Frame.checkedLength(length) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        }
        #expect(try Frame.checkedLength(6) == 6)
        #expect(try Frame.checkedLength(UInt32(Frame.maximumLength)) == Frame.maximumLength)
    }

    /// A client of another version gets the version error with both versions and what to do.
    @Test func anotherVersionIsAClearError() throws {
        var body = FrameGoldenTests.unhex(FrameGoldenTests.goldenUnlock).dropFirst(4)
        body[body.startIndex] = 4
        #expect { try Frame.decode(body: body) } throws: { error in
            guard let error = error as? KeychainError else { return false }
            return error.status == .wrongSecVersion && error.message.contains("protocol 3") && error.message.contains("protocol 4")
                && error.message.contains("same swift-keychain release")
        }
        // The refusal a version 1 client gets is a version 1 response: OSStatus and a dictionary with the message.
        let legacy = VersionMismatch.refusal(peerVersion: 1, id: 5)
        #expect(Array(legacy[4..<10]) == [1, 2, 0, 0, 0, 5])
        #expect(Array(legacy[10..<14]) == [0xFF, 0xFF, 0x9D, 0x22], "errSecWrongSecVersion, -25310")
        guard case .dictionary(let reply) = try PlistCoding.decode(legacy[15...]) else { Issue.record("no dictionary"); return }
        #expect(reply["message"] == .string(VersionMismatch.message(daemonVersion: 3, clientVersion: 1)))
        // A newer client gets the refusal frame, which every version reads.
        let newer = try Frame.decode(body: VersionMismatch.refusal(peerVersion: 9, id: 6).dropFirst(4))
        guard case .versionRefused(let supported, let message) = newer.body else { Issue.record("no refusal"); return }
        #expect(supported == Frame.version)
        #expect(message.contains("protocol 9"))
    }

    /// Every flipped byte or cut of a valid frame decodes to some message or fails with errSecDecode-class errors:
    /// it never traps, and counts that the bytes cannot hold are refused before allocation.
    @Test func damagedFramesFailCleanly() throws {
        let good = FrameGoldenTests.unhex(FrameGoldenTests.goldenItems)
        for index in 4..<good.count {
            for flip: UInt8 in [0xFF, 0x80, 0x01] {
                var damaged = good
                damaged[index] ^= flip
                do {
                    _ = try Frame.decode(body: damaged.dropFirst(4))
                } catch {
                    #expect(error.code == .corruptData || error.status == .wrongSecVersion, "byte \(index)")
                }
            }
        }
        for cut in 4..<good.count {
            #expect { try Frame.decode(body: good[4..<cut]) } throws: { ($0 as? KeychainError)?.code == .corruptData }
        }
        // A find whose attribute count claims four billion entries.
        let hostile: [UInt8] = [Frame.version, 1, 0, 0, 0, 1, 2, 4] + Array("genp".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0]
        #expect { try Frame.decode(body: hostile) } throws: { ($0 as? KeychainError)?.code == .corruptData }
    }
}
