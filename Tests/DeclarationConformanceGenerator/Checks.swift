import Foundation

/// Writes the compile-time checks of one row: a function that uses the symbol with Apple's exact types, so that
/// the test target does not build when our declaration differs, and the error names the symbol.
struct CheckWriter {
    /// Check functions' names used so far (overloads get a number).
    private var names: Set<String> = []

    /// Raw types of enums: a conformance in this list is the enum's raw value type.
    private static let rawTypes: Set<String> = ["Int", "Int32", "UInt32", "UInt", "Int64", "UInt64", "UInt8", "String", "CFIndex", "CFOptionFlags", "OSStatus"]

    mutating func checks(for row: DeclarationRow) throws -> String {
        let path = Self.path(of: row.symbol)
        let owner = path.dropLast().joined(separator: ".")
        // `Self` in a member's declaration (`static func == (left: Self, right: Self) -> Bool`) is its type.
        let declaration = owner.isEmpty ? row.declaration : row.declaration.replacingOccurrences(of: #"\bSelf\b"#, with: owner, options: .regularExpression)
        let shape = try DeclarationShape.parse(declaration)
        let member = owner.isEmpty ? "" : owner + "."
        var name = Self.functionName(for: row.symbol)
        if names.contains(name) {
            var number = 2
            while names.contains("\(name)_\(number)") { number += 1 }
            name += "_\(number)"
        }
        names.insert(name)
        var body: [String] = []
        var parameters: [String] = []
        var effects = ""
        switch shape {
        case .typeAlias(let alias, let type):
            body.append("same((\(member)\(alias)).self, (\(type)).self)")
        case .nominal(let kind, let type, let conformances):
            let full = member + type
            body.append(kind == "class" ? "isClass((\(full)).self)" : "_ = (\(full)).self")
            for conformance in conformances {
                let plain = conformance.replacingOccurrences(of: "@unchecked ", with: "")
                if plain.hasPrefix("_") || plain.isEmpty { continue }
                if kind == "enum", Self.rawTypes.contains(plain) {
                    body.append("same((\(full).RawValue).self, (\(plain)).self)")
                } else if plain.hasPrefix("NS") {
                    body.append("let _: (\(full)) -> \(plain) = { $0 }")
                } else {
                    body.append("let _: (\(full)) -> any \(plain) = { $0 }")
                }
            }
        case .enumCase(let caseName):
            body.append("let _: \(owner) = .\(caseName)")
        case .value(let valueName, let type, let isStatic, let settable):
            let exact = Self.optionalForIUO(type)
            if owner.isEmpty || isStatic {
                body.append("same(type(of: \(member)\(valueName)), (\(exact)).self)")
                if type.hasSuffix("!") { body.append("let _: \(type.dropLast()) = \(member)\(valueName)") }
                if settable {
                    parameters.append("_ value: \(exact)")
                    body.append("\(member)\(valueName) = value")
                }
            } else {
                parameters.append("_ object: inout \(owner)")
                body.append("same(type(of: object.\(valueName)), (\(exact)).self)")
                if settable {
                    parameters.append("_ value: \(exact)")
                    body.append("object.\(valueName) = value")
                }
            }
        case .function(let functionName, let functionParameters, let result, let isStatic, let isAsync, let throwing):
            let exactResult = Self.optionalForIUO(result)
            let arguments = Self.arguments(functionParameters, into: &parameters)
            let call: String
            let prefix = (throwing ? "try " : "") + (isAsync ? "await " : "")
            effects = (isAsync ? " async" : "") + (throwing ? " throws" : "")
            if !(functionName.first?.isLetter ?? false) && functionName.first != "_" {
                // An operator: its two operands.
                guard arguments.count == 2 else { throw GeneratorError("\(row.location): an operator takes two operands here") }
                call = "a0 \(functionName) a1"
            } else if owner.isEmpty || isStatic {
                call = "\(member)\(functionName)(\(arguments.joined(separator: ", ")))"
                if owner.isEmpty {
                    let types = functionParameters.map { ($0.isInout ? "inout " : "") + Self.optionalForIUO($0.type) }
                    body.append("let _: (\(types.joined(separator: ", ")))\(effects) -> \(exactResult) = \(functionName)")
                }
            } else {
                parameters.insert("_ object: inout \(owner)", at: 0)
                call = "object.\(functionName)(\(arguments.joined(separator: ", ")))"
            }
            body.append(exactResult == "Void" ? "\(prefix)\(call)" : "same(type(of: \(prefix)\(call)), (\(exactResult)).self)")
        case .initializer(let initParameters, let failable, let throwing):
            let arguments = Self.arguments(initParameters, into: &parameters)
            effects = throwing ? " throws" : ""
            let made = "\(throwing ? "try " : "")\(owner)(\(arguments.joined(separator: ", ")))"
            body.append("same(type(of: \(made)), (\(owner)\(failable ? "?" : "")).self)")
        }
        let comment = "// \(row.symbol): \(row.declaration)\n// \(row.source)"
        let function =
            "@available(*, deprecated, message: \"compile-time checks only\")\nfunc \(name)(\(parameters.joined(separator: ", ")))\(effects) {\n"
            + body.map { "    " + $0 + "\n" }.joined() + "}\n"
        guard row.source.hasPrefix("not in Apple's SDK") else { return comment + "\n" + function }
        // Ours only: where KeychainServices is Apple's Security framework, the symbol is not there.
        return comment + "\n#if !(canImport(Security) && !KEYCHAIN_FORCE_BUILD_API)\n" + function + "#endif\n"
    }

    /// `check_LAContext_setCredential_type` for `LAContext.setCredential(_:type:)`; an operator's characters are
    /// spelled out (`==` is `equal_equal`).
    static func functionName(for symbol: String) -> String {
        let spelled: [Character: String] = [
            "=": "equal", "!": "not", "<": "less", ">": "greater", "+": "plus", "-": "minus", "*": "times", "/": "slash", "%": "percent", "&": "and", "|": "or", "^": "caret", "~": "tilde",
        ]
        var name = "check"
        for character in symbol {
            let part = character.isLetter || character.isNumber ? String(character) : spelled[character].map { "_" + $0 + "_" } ?? "_"
            name += name.hasSuffix("_") && part.hasPrefix("_") ? String(part.dropFirst()) : part
        }
        while name.hasSuffix("_") { name.removeLast() }
        return name.replacingOccurrences(of: "check", with: "check_", options: .anchored)
    }

    /// `SecKeyAlgorithm.rsaSignatureRaw` → [SecKeyAlgorithm, rsaSignatureRaw]; a signature's labels are not split.
    static func path(of symbol: String) -> [String] {
        let head = symbol.firstIndex(of: "(").map { symbol[..<$0] } ?? Substring(symbol)
        var components = head.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        // An operator such as `==` ends the path: `SecAccessControl.==(_:_:)`.
        if let last = components.last, last.isEmpty, components.count >= 2 {
            components.removeLast()
        }
        return components
    }

    /// A type as a value of it has: `CFData!` is `CFData?` to `type(of:)`.
    static func optionalForIUO(_ type: String) -> String {
        type.hasSuffix("!") ? String(type.dropLast()) + "?" : type
    }

    /// Adds one parameter to the check function per parameter of the symbol, and returns the call's arguments.
    static func arguments(_ list: [Parameter], into parameters: inout [String]) -> [String] {
        list.enumerated().map { index, parameter in
            let type = optionalForIUO(parameter.type)
            parameters.append("_ a\(index): \(parameter.isInout ? "inout " : "")\(type)")
            let value = (parameter.isInout ? "&" : "") + "a\(index)"
            return parameter.label.map { "\($0): \(value)" } ?? value
        }
    }
}
