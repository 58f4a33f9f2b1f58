import Foundation
import KeychainCore

extension KeychainStore {
    /// A program keychaind recognises, and the entitlements it grants it: Apple's `application-identifier` and
    /// `keychain-access-groups`, given by registration instead of a code signature.
    public struct RegisteredProgram: Sendable, Hashable {
        /// How keychaind recognises the program.
        public enum Program: Sendable, Hashable {
            /// A host executable at `path` whose contents hash to `sha256` (lowercase hex); a changed or moved binary
            /// is another program until registered again.
            case executable(path: String, sha256: String)
            /// A Flatpak app, by its app ID.
            case flatpak(String)
            /// A snap, by its name.
            case snap(String)
        }

        /// The program.
        public var program: Program
        /// Its `application-identifier`, the last of its groups.
        public var applicationIdentifier: String?
        /// Its `keychain-access-groups`, in order: the first is where its new items go.
        public var accessGroups: [String]

        /// A registration of `program` for these groups.
        public init(program: Program, applicationIdentifier: String? = nil, accessGroups: [String]) {
            self.program = program
            self.applicationIdentifier = applicationIdentifier
            self.accessGroups = accessGroups
        }

        init(_ entry: AppRegistration) {
            switch entry.program {
            case let .executable(path, sha256): program = .executable(path: path, sha256: sha256)
            case let .flatpak(id): program = .flatpak(id)
            case let .snap(name): program = .snap(name)
            }
            applicationIdentifier = entry.applicationIdentifier
            accessGroups = entry.accessGroups
        }

        var registration: AppRegistration {
            let kind: AppRegistration.Program
            switch program {
            case let .executable(path, sha256): kind = .executable(path: path, sha256: sha256)
            case let .flatpak(id): kind = .flatpak(id)
            case let .snap(name): kind = .snap(name)
            }
            return AppRegistration(program: kind, applicationIdentifier: applicationIdentifier, accessGroups: accessGroups)
        }

        /// The groups the program gets, in Apple's order: ``accessGroups``, then ``applicationIdentifier``.
        public var groups: [String] { registration.groups }

        /// The lowercase hex SHA-256 of the file at `path`: what a registration of an executable records.
        public static func sha256(ofFileAt path: String) throws(KeychainError) -> String {
            try FileDigest.sha256Hex(ofFileAt: path)
        }
    }

    /// The registered programs, in registration order. Through keychaind only the admin tool may list them.
    public func registeredPrograms() throws(KeychainError) -> [RegisteredProgram] {
        try connection.registeredPrograms().map(RegisteredProgram.init)
    }

    /// Registers a program, replacing any registration of the same program.
    public func register(_ program: RegisteredProgram) throws(KeychainError) {
        try connection.register(program.registration)
    }

    /// Removes the registrations under an executable's path, a Flatpak app ID or a snap name; returns how many.
    @discardableResult
    public func unregisterProgram(named name: String) throws(KeychainError) -> Int {
        try connection.unregisterProgram(named: name)
    }
}
