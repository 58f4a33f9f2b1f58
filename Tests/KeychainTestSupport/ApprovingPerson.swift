import Foundation

/// A person at the machine for a keychaind under test: a scripted pinentry (named by `KEYCHAIN_PINENTRY` in
/// keychaind's environment) that answers every prompt as ``answer(_:)`` last said — `confirm` (Allow, then Always
/// allow), `pin PASSCODE` (the same, and the passcode when keychaind asks for it), or nothing (cancel) — after any
/// lines queued in `script`.
public struct ApprovingPerson: Sendable {
    /// The folder holding the wrapper and the answer file.
    public let folder: String
    /// The wrapper keychaind runs.
    public var pinentry: String { folder + "/person-pinentry" }
    /// The file whose first line is the standing answer.
    public var answerFile: String { folder + "/person" }
    /// What keychaind's environment needs to ask this person.
    public var environment: [String: String] { ["KEYCHAIN_PINENTRY": pinentry] }

    /// A person answering `answer` (nil: the answer file already there, if any, stands), in `folder`; lines in
    /// `script` answer first, and `log` records every prompt (the scripted pinentry's own variables).
    public init(in folder: String, answer: String? = "confirm", script: String? = nil, log: String? = nil) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var variables = "SCRIPTED_PINENTRY_DEFAULT='\(folder)/person'"
        if let script { variables += " SCRIPTED_PINENTRY_SCRIPT='\(script)'" }
        if let log { variables += " SCRIPTED_PINENTRY_LOG='\(log)'" }
        try writeExecutable(Data("#!/bin/sh\n\(variables) exec '\(try BuiltProducts.path(of: "scripted-pinentry"))'\n".utf8), to: pinentry)
        if let answer { try self.answer(answer) }
    }

    /// From now on, answers every prompt with `line` (nil: nobody answers, so prompts are cancelled).
    public func answer(_ line: String?) throws {
        if let line {
            try (line + "\n").write(toFile: answerFile, atomically: true, encoding: .utf8)
        } else if FileManager.default.fileExists(atPath: answerFile) {
            try FileManager.default.removeItem(atPath: answerFile)
        }
    }
}
