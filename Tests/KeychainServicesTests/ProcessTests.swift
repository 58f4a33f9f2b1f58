import Foundation
import Testing
import KeychainServices
import KeychainCore

@Suite struct ProcessTests {
    func tempHome() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("kc-proc-\(UUID().uuidString)").path
    }

    @Test func acknowledgedAddSurvivesSIGKILL() throws {
        let home = tempHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let process = Process()
        process.executableURL = productsDirectory().appendingPathComponent("keychain-test-helper")
        process.arguments = ["add-and-hold", "durable", "svc", "survives-kill-9"]
        process.environment = baseEnvironment(home: home)
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read the acknowledgement, then kill the writer at once, before it can do anything else.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(String(decoding: line, as: UTF8.self) == "status=0\n")
        #expect(process.terminationReason == .uncaughtSignal)

        let r = try runHelper(["find", "durable", "svc"], environment: baseEnvironment(home: home))
        #expect(r.stdout == "status=0\ndata=survives-kill-9\nagrp=\(try helperGroup())\n")
    }

    @Test(arguments: 0..<3)
    func concurrentAddsOfOneKeyLeaveExactlyOneItem(round: Int) throws {
        let home = tempHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let barrier = home + ".go"
        defer { try? FileManager.default.removeItem(atPath: barrier) }
        // Both processes start on an empty folder: they also race to create the keybag and the database.
        let env = baseEnvironment(home: home)
        var processes: [(Process, Pipe)] = []
        for i in 0..<2 {
            let p = Process()
            p.executableURL = productsDirectory().appendingPathComponent("keychain-test-helper")
            p.arguments = ["race", barrier, "same-account", "same-service", "writer-\(i)"]
            p.environment = env
            let out = Pipe()
            p.standardOutput = out
            p.standardInput = FileHandle.nullDevice
            try p.run()
            processes.append((p, out))
        }
        usleep(50_000)
        #expect(FileManager.default.createFile(atPath: barrier, contents: Data()))
        var statuses: [String] = []
        for (p, out) in processes {
            statuses.append(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
        }
        #expect(statuses.sorted() == ["status=-25299\n", "status=0\n"])

        let engine = try KeychainEngine(location: KeychainLocation(home: home))
        var q = ItemQuery(itemClass: .genericPassword)
        q.attributes["acct"] = .string("same-account")
        q.limit = .all
        q.returns.data = true
        let items = try engine.find(q, caller: .unrestricted(defaultGroup: "x"))
        #expect(items.count == 1)
        #expect(["writer-0", "writer-1"].contains(items.first.flatMap { $0.data }.map { String(decoding: $0, as: UTF8.self) } ?? ""))
    }

    @Test func aBusyDatabaseMakesWritersWaitNotFail() throws {
        let home = tempHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let env = baseEnvironment(home: home)
        #expect(try runHelper(["add", "first", "svc", "x"], environment: env).stdout == "status=0\n")
        // Another process takes the write lock and holds it for a second and a half.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        holder.arguments = [home + "/keychain-2.db"]
        let script = Pipe()
        let holderOut = Pipe()
        holder.standardInput = script
        holder.standardOutput = holderOut
        try holder.run()
        script.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\nSELECT 'locked';\n.shell sleep 1.5\nCOMMIT;\n".utf8))
        try script.fileHandleForWriting.close()
        // Wait until the lock is really held.
        var seen = Data()
        while !seen.contains(UInt8(ascii: "\n")) {
            let chunk = holderOut.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(String(decoding: seen, as: UTF8.self) == "locked\n")
        let start = Date()
        let r = try runHelper(["add", "second", "svc", "y"], environment: env)
        let waited = Date().timeIntervalSince(start)
        holder.waitUntilExit()
        #expect(r.stdout == "status=0\n")
        #expect(waited > 0.5, "the add should have waited for the lock, took \(waited) s")
        #expect(try runHelper(["find", "second", "svc"], environment: env).stdout == "status=0\ndata=y\nagrp=\(try helperGroup())\n")
    }

    @Test func anAppUnlocksOnceForBothAPIs() throws {
        let home = tempHome()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let env = baseEnvironment(home: home)
        #expect(try runHelper(["set-passcode", "1234", "alice", "svc", "s3cret"], environment: env).stdout == "status=0\n")
        // A new process starts before its first unlock; unlocking through KeychainKit's default store also
        // unlocks its SecItem calls (one engine per keychain per process).
        #expect(try runHelper(["unlock-and-find", "1234", "alice", "svc"], environment: env).stdout == "before=-25308\nafter=0\n")
        #expect(try runHelper(["unlock-and-find", "wrong", "alice", "svc"], environment: env).stdout == "before=-25308\nerror=-25293\n")
    }
}
