import Foundation
import KeychainCore
import KeychainTestSupport
import Testing
@testable import KeychainProtocol

/// `sync` (request tag 50, a command) and its answer (response tag 50, a reply), fixed by golden bytes computed by
/// hand (Python's struct) from the encoding described in SyncMessageCoding.swift.
@Suite struct SyncMessageTests {
    static let request = Frame(id: 7, body: .request(.sync(.approve(code: "ABCDE-FGHJK", deviceName: "laptop"))))
    static let status = SyncStatusReport(
        account: "acc", server: "https://s", device: "dev", joined: true,
        lastSync: Date(timeIntervalSinceReferenceDate: 1.5), lastError: nil,
        pendingChanges: 2, conflictsResolved: 1, pushConnected: true,
        removal: SyncRemoval(date: Date(timeIntervalSinceReferenceDate: 1.5), by: "pc"),
        running: SyncTransfer(receivedRecords: 1, receivedBytes: 2, sentRecords: 3, sentBytes: 4, toSend: 5))
    static let statusResponse = Frame(id: 7, body: .response(.sync(.status(status))))
    static let device = SyncDeviceInfo(id: "ab", name: "pc", fingerprint: "f", added: Date(timeIntervalSinceReferenceDate: -2), isThisDevice: true)
    static let devicesResponse = Frame(id: 8, body: .response(.sync(.devices([device]))))

    // length | version 3 | request | id 7 | tag 50 | approve (3) | "ABCDE-FGHJK" | "laptop"
    static let goldenRequest = "0000002103010000000732030000000b41424344452d4647484a4b000000066c6170746f70"
    // length | version 3 | response | id 7 | tag 50 | status (7) | some "acc" | some "https://s" | some "dev" | joined |
    // some date 1.5 | no error | pending 2 | conflicts 1 | push connected | some removal (some date 1.5, some "pc") |
    // some running round (received 1 record, 2 bytes, sent 3, 4 bytes, 5 to send)
    static let goldenStatus =
        "0000007c03020000000732070100000003616363010000000968747470733a2f2f73010000000364657601013ff8000000000000000000"
        + "00000000000200000000000000010101013ff80000000000000100000002706301000000000000000100000000000000020000000000"
        + "00000300000000000000040000000000000005"
    // length | version 3 | response | id 8 | tag 50 | devices (5) | 1 device: "ab" | "pc" | "f" | date -2 | this device
    static let goldenDevices = "000000260302000000083205000000010000000261620000000270630000000166c00000000000000001"

    @Test func syncMessagesEncodeToTheirGoldenBytes() {
        #expect(FrameGoldenTests.hex(Self.request.encoded) == Self.goldenRequest)
        #expect(FrameGoldenTests.hex(Self.statusResponse.encoded) == Self.goldenStatus)
        #expect(FrameGoldenTests.hex(Self.devicesResponse.encoded) == Self.goldenDevices)
    }

    @Test func goldenBytesDecodeToTheSameMessages() throws {
        let request = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenRequest).dropFirst(4))
        #expect(request.id == 7)
        guard case .request(.sync(let command)) = request.body else {
            Issue.record("not a sync request")
            return
        }
        #expect(command == .approve(code: "ABCDE-FGHJK", deviceName: "laptop"))
        let status = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenStatus).dropFirst(4))
        guard case .response(.sync(.status(let report))) = status.body else {
            Issue.record("not a sync status")
            return
        }
        #expect(report == Self.status)
        let devices = try Frame.decode(body: FrameGoldenTests.unhex(Self.goldenDevices).dropFirst(4))
        guard case .response(.sync(.devices(let list))) = devices.body else {
            Issue.record("not a device list")
            return
        }
        #expect(list == [Self.device])
    }

    /// Every command and every reply comes back as it was sent.
    @Test(arguments: [
        SyncCommand.createAccount(server: "https://sync.example.com", deviceName: "büro"), .join(server: "http://h:8080", account: "a-1"),
        .approve(code: "x", deviceName: ""), .devices, .removeDevice(id: "0123456789abcdef0123456789abcdef"), .status, .now,
    ])
    func everyCommandRoundTrips(_ command: SyncCommand) throws {
        let frame = Frame(id: 3, body: .request(.sync(command))).encoded
        guard case .request(.sync(let decoded)) = try Frame.decode(body: frame.dropFirst(4)).body else {
            Issue.record("not a sync request")
            return
        }
        #expect(decoded == command)
    }

    @Test(arguments: [
        SyncReply.accountCreated(account: "acc"), .joinPending(code: "ABCDE-FGHJK", fingerprint: "12 34"), .joined(account: "acc"),
        .approved(fingerprint: "f"), .devices([]), .devices([device, SyncDeviceInfo(id: "cd", name: "", fingerprint: "", added: Date(timeIntervalSinceReferenceDate: 0), isThisDevice: false)]),
        .removed, .status(SyncStatusReport()), .status(SyncStatusReport(account: "a", lastError: "offline", pendingChanges: 5)),
        .round(SyncRoundReport(applied: 1, uploaded: 2, conflictsResolved: 3, rejected: 4)),
        .round(SyncRoundReport(applied: 1, uploaded: 2, transfer: SyncTransfer(receivedRecords: 5, receivedBytes: 6, sentRecords: 7, sentBytes: 8, toSend: 9))),
        .status(SyncStatusReport(account: "a", removal: SyncRemoval(), running: SyncTransfer())),
    ])
    func everyReplyRoundTrips(_ reply: SyncReply) throws {
        let frame = Frame(id: 3, body: .response(.sync(reply))).encoded
        guard case .response(.sync(let decoded)) = try Frame.decode(body: frame.dropFirst(4)).body else {
            Issue.record("not a sync reply")
            return
        }
        #expect(decoded == reply)
    }

    /// A string over its ceiling is refused, not kept: a server address of 2,049 bytes, a device name of 513.
    @Test func aStringOverItsCeilingIsRefused() throws {
        let long = Frame(
            id: 1,
            body: .request(
                .sync(
                    .createAccount(
                        server: "https://" + String(repeating: "a", count: SyncWireLimits.server - 7),
                        deviceName: "n")))
        ).encoded
        expectKeychainError(.corruptData) { try Frame.decode(body: long.dropFirst(4)) }
        let atCeiling = Frame(
            id: 1,
            body: .request(
                .sync(
                    .createAccount(
                        server: "https://" + String(repeating: "a", count: SyncWireLimits.server - 8),
                        deviceName: String(repeating: "n", count: SyncWireLimits.deviceName))))
        ).encoded
        _ = try Frame.decode(body: atCeiling.dropFirst(4))
        let longName = Frame(id: 1, body: .request(.sync(.approve(code: "c", deviceName: String(repeating: "n", count: SyncWireLimits.deviceName + 1))))).encoded
        expectKeychainError(.corruptData) { try Frame.decode(body: longName.dropFirst(4)) }
    }

    /// A client refuses to send what keychaind would refuse to read, saying what is too long.
    @Test func aCommandOverTheCeilingsIsRefusedBeforeItIsSent() throws {
        try SyncCommand.join(server: "https://s", account: String(repeating: "a", count: SyncWireLimits.identifier)).checkWireLimits()
        expectKeychainError(.invalidParameter, status: .param) {
            try SyncCommand.join(server: "https://s", account: String(repeating: "a", count: SyncWireLimits.identifier + 1)).checkWireLimits()
        }
        expectKeychainError(.invalidParameter, status: .param) {
            try SyncCommand.approve(code: "ABCDE-FGHJK", deviceName: String(repeating: "n", count: SyncWireLimits.deviceName + 1)).checkWireLimits()
        }
        try SyncCommand.now.checkWireLimits()
    }

    /// A last error longer than the reader takes is cut at a character by the writer, so the answer still arrives.
    @Test func aLongLastErrorIsCutNotRefused() throws {
        let message = String(repeating: "é", count: SyncWireLimits.lastError)
        let frame = Frame(id: 1, body: .response(.sync(.status(SyncStatusReport(lastError: message))))).encoded
        guard case .response(.sync(.status(let report))) = try Frame.decode(body: frame.dropFirst(4)).body else {
            Issue.record("not a sync status")
            return
        }
        #expect(report.lastError == String(repeating: "é", count: SyncWireLimits.lastError / 2))
    }

    /// A device count beyond the ceiling, or beyond what the bytes left could hold, and a negative count are refused.
    @Test func badCountsAreRefused() throws {
        var bytes = FrameGoldenTests.unhex(Self.goldenDevices)
        // The device count follows length (4), header (6), tag and kind (2).
        let countOffset = 12
        #expect(bytes[countOffset..<countOffset + 4].elementsEqual([0, 0, 0, 1]))
        bytes[countOffset + 2] = 1  // 257 devices in the bytes of one
        expectKeychainError(.corruptData) { try Frame.decode(body: bytes.dropFirst(4)) }

        let many = (0..<SyncWireLimits.devices + 1).map { SyncDeviceInfo(id: "\($0)", name: "", fingerprint: "", added: Date(timeIntervalSinceReferenceDate: 0), isThisDevice: false) }
        let tooMany = Frame(id: 1, body: .response(.sync(.devices(many)))).encoded
        expectKeychainError(.corruptData) { try Frame.decode(body: tooMany.dropFirst(4)) }

        var negative = FrameGoldenTests.unhex(Self.goldenStatus)
        // The pending-changes count is the 17 bytes before the end's conflicts count and push flag: make it -1.
        let pendingOffset = negative.count - 17
        for index in pendingOffset..<pendingOffset + 8 { negative[index] = 0xFF }
        expectKeychainError(.corruptData) { try Frame.decode(body: negative.dropFirst(4)) }
    }
}
