import Foundation
import KeychainClient
import KeychainCore
import KeychainServices
import LocalAuthentication
import Testing

/// An access control made the way apps make one; fails the test when it cannot be.
func accessControl(_ flags: SecAccessControlCreateFlags, _ protection: CFString = kSecAttrAccessibleWhenUnlocked) throws -> SecAccessControl {
    var error: Unmanaged<CFError>?
    let control = SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, flags, &error)
    #expect(error == nil)
    return try #require(control)
}

/// The code and domain of the error `SecAccessControlCreateWithFlags` reports for `flags` and `protection`, and
/// whether it returned nil.
func creationError(_ flags: SecAccessControlCreateFlags, _ protection: CFTypeRef = kSecAttrAccessibleWhenUnlocked) -> (code: Int?, domain: String?, isNil: Bool) {
    var error: Unmanaged<CFError>?
    let control = SecAccessControlCreateWithFlags(nil, protection, flags, &error)
    let object = error?.takeRetainedValue()
    return (object.map { CFErrorGetCode($0) }, object.map { CFErrorGetDomain($0) as String }, control == nil)
}

/// The message of the keychain error an item call fails with (the `OSStatus` alone says less).
func failure(_ body: () throws(KeychainCore.KeychainError) -> Void) -> KeychainCore.KeychainError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

@Suite struct SecAccessControlCreationTests {
    @Test func flagsHaveApplesBits() {
        #expect(SecAccessControlCreateFlags.userPresence.rawValue == 1)
        #expect(SecAccessControlCreateFlags.biometryAny.rawValue == 2)
        #expect(SecAccessControlCreateFlags.biometryCurrentSet.rawValue == 8)
        #expect(SecAccessControlCreateFlags.devicePasscode.rawValue == 16)
        #expect(SecAccessControlCreateFlags.watch.rawValue == 32)
        #expect(SecAccessControlCreateFlags.companion == .watch)
        #expect(SecAccessControlCreateFlags.or.rawValue == 1 << 14)
        #expect(SecAccessControlCreateFlags.and.rawValue == 1 << 15)
        #expect(SecAccessControlCreateFlags.privateKeyUsage.rawValue == 1 << 30)
        #expect(SecAccessControlCreateFlags.applicationPassword.rawValue == 1 << 31)
    }

    @Test(arguments: [
        SecAccessControlCreateFlags.userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .watch,
        .companion, .or, .and, .privateKeyUsage, .applicationPassword, [],
    ])
    func eachSingleFlagIsAccepted(_ flags: SecAccessControlCreateFlags) throws {
        let control = try accessControl(flags)
        #expect(control.flags == flags)
        #expect(control.protection == "ak")
    }

    @Test(
        arguments: [
            [SecAccessControlCreateFlags.devicePasscode, .or, .biometryAny],
            [.devicePasscode, .and, .biometryCurrentSet],
            [.devicePasscode, .biometryAny],
            [.userPresence, .applicationPassword],
            [.userPresence, .privateKeyUsage],
            [.userPresence, .privateKeyUsage, .applicationPassword],
            [.biometryCurrentSet, .privateKeyUsage],
            [.devicePasscode, .applicationPassword, .or],
        ] as [SecAccessControlCreateFlags])
    func applesValidCombinationsAreAccepted(_ flags: SecAccessControlCreateFlags) throws {
        #expect(try accessControl(flags, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly).flags == flags)
    }

    @Test(
        arguments: [
            [SecAccessControlCreateFlags.or, .and],
            [.devicePasscode, .or, .and],
            [.biometryAny, .biometryCurrentSet],
            [.userPresence, .devicePasscode],
            [.userPresence, .biometryAny],
            [.userPresence, .biometryCurrentSet],
            [.userPresence, .or],
            [.userPresence, .and],
        ] as [SecAccessControlCreateFlags])
    func invalidCombinationsAreRejectedWithErrSecParam(_ flags: SecAccessControlCreateFlags) {
        let result = creationError(flags)
        #expect(result.isNil)
        #expect(result.code == -50)
        #expect(result.domain == NSOSStatusErrorDomain)
    }

    @Test func theProtectionMustBeAnAccessibleConstant() {
        for protection: CFTypeRef in ["bogus" as NSString, kSecAttrAccessControl, NSNumber(value: 1), NSData()] {
            let result = creationError(.devicePasscode, protection)
            #expect(result.isNil)
            #expect(result.code == -50)
            #expect(result.domain == kCFErrorDomainOSStatus as String)
        }
        for protection in [
            kSecAttrAccessibleWhenUnlocked, kSecAttrAccessibleAfterFirstUnlock, kSecAttrAccessibleAlways,
            kSecAttrAccessibleWhenUnlockedThisDeviceOnly, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            kSecAttrAccessibleAlwaysThisDeviceOnly, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
        ] {
            #expect(creationError(.devicePasscode, protection).isNil == false)
        }
        // No error pointer: nil all the same.
        #expect(SecAccessControlCreateWithFlags(nil, "bogus" as CFString, .devicePasscode, nil) == nil)
    }

    @Test func typeIDAndEquality() throws {
        let control = try accessControl(.devicePasscode)
        #expect(CFGetTypeID(control) == SecAccessControlGetTypeID())
        #expect(SecAccessControlGetTypeID() != SecKeyGetTypeID())
        #expect(SecAccessControlGetTypeID() != CFDataGetTypeID())
        #expect(CFEqual(control, try accessControl(.devicePasscode)))
        #expect(CFHash(control) == CFHash(try accessControl(.devicePasscode)))
        #expect(!CFEqual(control, try accessControl(.biometryAny)))
        #expect(!CFEqual(control, try accessControl(.devicePasscode, kSecAttrAccessibleAfterFirstUnlock)))
    }
}

@Suite struct AccessControlItemTests {
    static let secret = Data("protected secret".utf8)

    /// Adds a generic password `account` protected by `.devicePasscode` (WhenUnlocked).
    static func addProtected(_ account: String, service: String = "svc") throws {
        let control = try accessControl(.devicePasscode)
        #expect(add(genp(account, service, [kSecAttrAccessControl as String: control, kSecValueData as String: secret])) == errSecSuccess)
    }

    @Test(arguments: Backend.allCases)
    func theAccessControlComesBackWithTheAttributes(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            try Self.addProtected("alice")
            let (status, result) = copy(
                genp(
                    "alice", "svc",
                    [
                        kSecReturnAttributes as String: true,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                    ]))
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            let control = try #require(attributes[kSecAttrAccessControl as String] as? SecAccessControl)
            #expect(CFGetTypeID(control) == SecAccessControlGetTypeID())
            #expect(CFEqual(control, try accessControl(.devicePasscode)))
            #expect(control.flags == .devicePasscode)
            #expect(control.protection == "ak")
            #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlocked as String)
        }
    }

    @Test(arguments: Backend.allCases)
    func theAccessControlsProtectionBecomesTheItemsAccessibility(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let control = try accessControl(.devicePasscode, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly)
            #expect(add(genp("bob", "svc", [kSecAttrAccessControl as String: control])) == errSecSuccess)
            let (status, result) = copy(genp("bob", "svc", [kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        }
    }

    @Test(arguments: Backend.allCases)
    func addReturnsAndUpdateSetsTheAccessControl(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            // SecItemAdd's kSecReturnAttributes: the access control as a SecAccessControl.
            let control = try accessControl([.devicePasscode, .or, .biometryAny], kSecAttrAccessibleWhenUnlockedThisDeviceOnly)
            var added: CFTypeRef?
            #expect(
                SecItemAdd(
                    genp("carol", "svc", [kSecAttrAccessControl as String: control, kSecReturnAttributes as String: true]) as CFDictionary,
                    &added) == errSecSuccess)
            let addedAttributes = try #require(added as? [String: Any])
            #expect((addedAttributes[kSecAttrAccessControl as String] as? SecAccessControl).map { CFEqual($0, control) } == true)

            // SecItemUpdate protects a plain item; its accessibility follows the access control.
            #expect(add(genp("dave", "svc", [kSecValueData as String: Data("d".utf8)])) == errSecSuccess)
            let passcode = try accessControl(.devicePasscode, kSecAttrAccessibleAfterFirstUnlock)
            #expect(SecItemUpdate(genp("dave", "svc") as CFDictionary, [kSecAttrAccessControl as String: passcode] as CFDictionary) == errSecSuccess)
            let (status, result) = copy(genp("dave", "svc", [kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect((attributes[kSecAttrAccessControl as String] as? SecAccessControl).map { CFEqual($0, passcode) } == true)
            #expect(attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleAfterFirstUnlock as String)
            #expect(
                copy(
                    genp(
                        "dave", "svc",
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                        ])
                ).0 == errSecInteractionNotAllowed)
            // Not a SecAccessControl in an update either.
            #expect(SecItemUpdate(genp("dave", "svc") as CFDictionary, [kSecAttrAccessControl as String: "x"] as CFDictionary) == errSecParam)
        }
    }

    @Test(arguments: Backend.allCases)
    func accessibleAndAccessControlTogetherAreRefused(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let control = try accessControl(.devicePasscode)
            #expect(
                add(
                    genp(
                        "alice", "svc",
                        [
                            kSecAttrAccessControl as String: control,
                            kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
                        ])) == errSecParam)
            #expect(copy(genp("alice", "svc")).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases)
    func anAccessControlMustBeASecAccessControl(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        kc.run {
            for value: Any in ["devicePasscode", Data([1, 2, 3]), 16, true] {
                #expect(add(genp("alice", "svc", [kSecAttrAccessControl as String: value])) == errSecParam)
            }
            #expect(copy(genp("alice", "svc")).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases)
    func readingAProtectedSecretWithoutPromptsFails(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            try Self.addProtected("alice")
            // kSecUseAuthenticationUIFail: never a prompt.
            #expect(
                copy(
                    genp(
                        "alice", "svc",
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                        ])
                ).0 == errSecInteractionNotAllowed)
            // The deprecated kSecUseNoAuthenticationUI means the same.
            #expect(copy(genp("alice", "svc", [kSecReturnData as String: true, kSecUseNoAuthenticationUI as String: true])).0 == errSecInteractionNotAllowed)
            // Allowed to prompt, with no pinentry that can show a prompt (no display or terminal in these tests): the same status, and a message
            // saying why.
            #expect(
                copy(
                    genp(
                        "alice", "svc",
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIAllow,
                        ])
                ).0 == errSecInteractionNotAllowed)
            #expect(copy(genp("alice", "svc", [kSecReturnData as String: true])).0 == errSecInteractionNotAllowed)
            let error = try #require(
                failure { () throws(KeychainCore.KeychainError) in
                    _ = try KeychainConnector.environment().secItemCopyMatching(["class": .string("genp"), "acct": .string("alice"), "r_Data": .bool(true)])
                })
            #expect(error.status.rawValue == -25308)
            #expect(error.message.contains("No prompt can be shown"))
        }
    }

    @Test(arguments: Backend.allCases)
    func attributesAndDeletionNeedNoPrompt(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            try Self.addProtected("alice")
            let (status, result) = copy(
                genp(
                    "alice", "svc",
                    [
                        kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                    ]))
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrAccount as String] as? String == "alice")
            #expect(attributes[kSecValueData as String] == nil)
            #expect(SecItemDelete(genp("alice", "svc", [kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail]) as CFDictionary) == errSecSuccess)
            #expect(copy(genp("alice", "svc")).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases)
    func skipLeavesProtectedItemsOut(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            try Self.addProtected("p1")
            try Self.addProtected("p2")
            #expect(add(genp("plain1", "svc", [kSecValueData as String: Data("one".utf8)])) == errSecSuccess)
            #expect(add(genp("plain2", "svc", [kSecValueData as String: Data("two".utf8)])) == errSecSuccess)
            let (status, result) = copy(
                genp(
                    nil, "svc",
                    [
                        kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true,
                        kSecReturnAttributes as String: true,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip,
                    ]))
            #expect(status == errSecSuccess)
            let items = try #require(result as? [[String: Any]])
            #expect(items.count == 2)
            #expect(Set(items.compactMap { $0[kSecAttrAccount as String] as? String }) == ["plain1", "plain2"])
            #expect(Set(items.compactMap { $0[kSecValueData as String] as? Data }) == [Data("one".utf8), Data("two".utf8)])
            // Data alone (no attributes): the two plain secrets.
            let (dataStatus, dataResult) = copy(
                genp(
                    nil, "svc",
                    [
                        kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip,
                    ]))
            #expect(dataStatus == errSecSuccess)
            #expect(Set(try #require(dataResult as? [Data])) == [Data("one".utf8), Data("two".utf8)])
            // Only protected items: none found.
            #expect(
                copy(
                    genp(
                        "p1", "svc",
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUISkip,
                        ])
                ).0 == errSecItemNotFound)
        }
    }

    @Test(arguments: Backend.allCases)
    func aContextThatForbidsInteractionActsAsFail(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            try Self.addProtected("alice")
            let context = LAContext()
            context.interactionNotAllowed = true
            let query = genp("alice", "svc", [kSecReturnData as String: true, kSecUseAuthenticationContext as String: context])
            #expect(copy(query).0 == errSecInteractionNotAllowed)
            let error = try #require(
                failure { () throws(KeychainCore.KeychainError) in
                    _ = try KeychainConnector.environment().secItemCopyMatching([
                        "class": .string("genp"), "acct": .string("alice"), "r_Data": .bool(true),
                        "u_AuthCtx": .authenticationContext(context.value),
                    ])
                })
            #expect(error.status.rawValue == -25308)
            #expect(error.message.contains("does not allow a prompt"))
            // Plain items are read as usual with the same context.
            #expect(add(genp("plain", "svc", [kSecValueData as String: Data("p".utf8)])) == errSecSuccess)
            #expect(copy(genp("plain", "svc", [kSecReturnData as String: true, kSecUseAuthenticationContext as String: context])).1 as? Data == Data("p".utf8))
            // Not an LAContext: errSecParam.
            #expect(copy(genp("plain", "svc", [kSecUseAuthenticationContext as String: "context"])).0 == errSecParam)
        }
    }

    @Test(arguments: Backend.allCases)
    func anApplicationPasswordGivenInTheContextOpensTheItem(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let context = LAContext()
            #expect(context.setCredential(Data("app password".utf8), type: .applicationPassword))
            #expect(context.isCredentialSet(.applicationPassword))
            let control = try accessControl(.applicationPassword)
            #expect(
                add(
                    genp(
                        "alice", "svc",
                        [
                            kSecAttrAccessControl as String: control,
                            kSecValueData as String: Self.secret,
                            kSecUseAuthenticationContext as String: context,
                        ])) == errSecSuccess)
            // With the password in a context: read without a prompt.
            let reader = LAContext()
            reader.setCredential(Data("app password".utf8), type: .applicationPassword)
            let (status, data) = copy(
                genp(
                    "alice", "svc",
                    [
                        kSecReturnData as String: true, kSecUseAuthenticationContext as String: reader,
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                    ]))
            #expect(status == errSecSuccess)
            #expect(data as? Data == Self.secret)
            // Without it, the password would have to be asked for.
            #expect(
                copy(
                    genp(
                        "alice", "svc",
                        [
                            kSecReturnData as String: true,
                            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                        ])
                ).0 == errSecInteractionNotAllowed)
            // An invalidated context carries no credential any more, and never prompts.
            reader.invalidate()
            #expect(!reader.isCredentialSet(.applicationPassword))
            #expect(!reader.setCredential(Data("app password".utf8), type: .applicationPassword))
            #expect(copy(genp("alice", "svc", [kSecReturnData as String: true, kSecUseAuthenticationContext as String: reader])).0 == errSecInteractionNotAllowed)
        }
    }

    @Test func contextSettings() {
        let context = LAContext()
        #expect(context.touchIDAuthenticationAllowableReuseDuration == 0)
        context.touchIDAuthenticationAllowableReuseDuration = 1000
        #expect(context.touchIDAuthenticationAllowableReuseDuration == LATouchIDAuthenticationMaximumAllowableReuseDuration)
        #expect(LATouchIDAuthenticationMaximumAllowableReuseDuration == 300)
        context.touchIDAuthenticationAllowableReuseDuration = -5
        #expect(context.touchIDAuthenticationAllowableReuseDuration == 0)
        context.localizedReason = "Unlock the vault"
        context.localizedFallbackTitle = "Use passcode"
        context.localizedCancelTitle = "Not now"
        #expect(context.localizedFallbackTitle == "Use passcode")
        #expect(context.localizedCancelTitle == "Not now")
        #expect(context.value.localizedReason == "Unlock the vault")
        // A smart card PIN is carried to the token's keys; invalidating the context drops it.
        #expect(!context.isCredentialSet(.smartCardPIN))
        #expect(context.setCredential(Data("1234".utf8), type: .smartCardPIN))
        #expect(context.isCredentialSet(.smartCardPIN))
        #expect(context.value.smartCardPIN == Data("1234".utf8))
        #expect(context.setCredential(nil, type: .smartCardPIN))
        #expect(!context.isCredentialSet(.smartCardPIN))
        #expect(context.value.smartCardPIN == nil)
        // Two contexts never share proofs.
        #expect(LAContext().value.id != LAContext().value.id)
        #expect(context.value.id == context.value.id)
    }
}

@Suite struct AccessControlKeyTests {
    /// A key in the keychain's token with `flags` (and `.privateKeyUsage`), made with `context` when given.
    static func protectedTokenKey(_ tag: String, _ flags: SecAccessControlCreateFlags, context: LAContext? = nil) throws -> SecKey {
        var privateAttributes: [String: Any] = [
            kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Data(tag.utf8),
            kSecAttrAccessControl as String: try accessControl(flags.union(.privateKeyUsage), kSecAttrAccessibleWhenUnlockedThisDeviceOnly),
        ]
        if let context { privateAttributes[kSecUseAuthenticationContext as String] = context }
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateRandomKey(
            [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
                kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                kSecPrivateKeyAttrs as String: privateAttributes,
            ] as CFDictionary, &error)
        #expect(error == nil)
        return try #require(key)
    }

    /// The status and message of a signature that failed.
    static func signatureFailure(_ key: SecKey) -> (status: Int?, message: String?) {
        var error: Unmanaged<CFError>?
        let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error)
        #expect(signature == nil)
        let object = error?.takeRetainedValue()
        return (object.map { CFErrorGetCode($0) }, object?.userInfo[NSDebugDescriptionErrorKey] as? String)
    }

    @Test(arguments: Backend.allCases)
    func privateKeyUsageReachesTheTokenKey(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            // No constraint beyond .privateKeyUsage: signing is open.
            let open = try Self.protectedTokenKey("open", [])
            var error: Unmanaged<CFError>?
            let message = Data("message".utf8)
            let signature = try #require(SecKeyCreateSignature(open, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data?)
            let publicKey = try #require(SecKeyCopyPublicKey(open))
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, &error))

            // The access control is stored with the key.
            let (status, result) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("open".utf8),
                kSecReturnAttributes as String: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            let stored = try #require(attributes[kSecAttrAccessControl as String] as? SecAccessControl)
            #expect(stored.flags == .privateKeyUsage)
            #expect(stored.protection == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)

            // The passcode: with no pinentry that can show a prompt, signing fails with errSecInteractionNotAllowed, saying why.
            let guarded = try Self.protectedTokenKey("guarded", .devicePasscode)
            let failure = Self.signatureFailure(guarded)
            #expect(failure.status == -25308)
            #expect(failure.message?.contains("No prompt can be shown") == true)
        }
    }

    @Test(arguments: Backend.allCases)
    func aKeyKeepsTheContextItWasObtainedWith(_ backend: Backend) throws {
        let kc = try TestKeychain(backend)
        try kc.run {
            let quiet = LAContext()
            quiet.interactionNotAllowed = true
            // Made with a context: its operations use it (which forbids prompts).
            let made = try Self.protectedTokenKey("guarded", .devicePasscode, context: quiet)
            let madeFailure = Self.signatureFailure(made)
            #expect(madeFailure.status == -25308)
            #expect(madeFailure.message?.contains("does not allow a prompt") == true)

            // Found with a context (kSecReturnRef): the same.
            let (status, result) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("guarded".utf8),
                kSecReturnRef as String: true, kSecUseAuthenticationContext as String: quiet,
            ])
            #expect(status == errSecSuccess)
            let found = try #require(result.flatMap { CFGetTypeID($0) == SecKeyGetTypeID() ? ($0 as? SecKey) : nil })
            let foundFailure = Self.signatureFailure(found)
            #expect(foundFailure.status == -25308)
            #expect(foundFailure.message?.contains("does not allow a prompt") == true)

            // Found without one: the key may prompt (and, with no pinentry that can show one here, says so).
            let (_, plain) = copy([
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("guarded".utf8),
                kSecReturnRef as String: true,
            ])
            let plainKey = try #require(plain.flatMap { $0 as? SecKey })
            #expect(Self.signatureFailure(plainKey).message?.contains("No prompt can be shown") == true)
        }
    }
}
