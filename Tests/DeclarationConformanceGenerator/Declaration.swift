import Foundation

/// One row of a declaration table: a public symbol, Apple's Swift declaration of it, and where that came from.
struct DeclarationRow {
    /// The symbol's path as a symbol graph names it: `kSecClass`, `SecItemAdd(_:_:)`, `LAContext.localizedReason`.
    var symbol: String
    /// Apple's declaration as its documentation shows it: `func SecItemAdd(_ attributes: CFDictionary, …) -> OSStatus`.
    var declaration: String
    /// The page or file the declaration was taken from.
    var source: String
    /// The table file and line, for messages.
    var location: String

    /// The rows of a table: three tab-separated columns a line; `#` starts a comment line, empty lines are skipped.
    static func parse(_ text: String, file: String) throws -> [DeclarationRow] {
        var rows: [DeclarationRow] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            let location = "\(file):\(index + 1)"
            guard columns.count == 3, !columns[0].isEmpty, !columns[1].isEmpty, !columns[2].isEmpty else {
                throw GeneratorError("\(location): a row has three tab-separated columns: symbol, declaration, source")
            }
            rows.append(DeclarationRow(symbol: columns[0], declaration: columns[1], source: columns[2], location: location))
        }
        return rows
    }
}

/// What went wrong reading a table, with the file and line.
struct GeneratorError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A parameter of a function or initializer: its argument label (nil for `_`), its type, and whether it is `inout`.
struct Parameter: Equatable {
    var label: String?
    var type: String
    var isInout: Bool
}

/// The parts of a declaration the checks need.
enum DeclarationShape: Equatable {
    /// `typealias Name = Type`
    case typeAlias(name: String, type: String)
    /// `class`, `struct` or `enum Name : Conformances`
    case nominal(kind: String, name: String, conformances: [String])
    /// `case name`
    case enumCase(name: String)
    /// `var`/`let name: Type` (global, instance or `static`); `settable` for `{ get set }` and stored `var`s.
    case value(name: String, type: String, isStatic: Bool, settable: Bool)
    /// `func name(parameters) async throws -> Result`, `static func`, operators.
    case function(name: String, parameters: [Parameter], result: String, isStatic: Bool, isAsync: Bool, throwing: Bool)
    /// `init(parameters)` or `init?(parameters)`.
    case initializer(parameters: [Parameter], failable: Bool, throwing: Bool)
}

extension DeclarationShape {
    /// Reads Apple's declaration text. Attributes (`@discardableResult`, `nonisolated(unsafe)`, `@MainActor`),
    /// modifiers (`final`, `open`, `override`, `convenience`) and default values are dropped.
    static func parse(_ declaration: String) throws -> DeclarationShape {
        var words = Substring(declaration.trimmingCharacters(in: .whitespaces))
        let modifiers = ["final ", "open ", "public ", "override ", "convenience ", "required ", "nonisolated(unsafe) ", "nonisolated ", "mutating ", "optional "]
        var isStatic = false
        while true {
            if words.hasPrefix("@") {
                // An attribute, with its arguments if any.
                var end = words.firstIndex(where: { $0 == " " || $0 == "(" }) ?? words.endIndex
                if end < words.endIndex, words[end] == "(" { end = try closing(of: words, from: end) }
                words = words[end...].drop(while: { $0 == " " })
                continue
            }
            if words.hasPrefix("static ") {
                isStatic = true
                words = words.dropFirst("static ".count)
                continue
            }
            if words.hasPrefix("class func ") {
                isStatic = true
                words = words.dropFirst("class ".count)
                continue
            }
            if let modifier = modifiers.first(where: { words.hasPrefix($0) }) {
                words = words.dropFirst(modifier.count)
                continue
            }
            break
        }
        let text = String(words)
        if text.hasPrefix("typealias ") {
            let rest = text.dropFirst("typealias ".count)
            guard let equals = rest.firstIndex(of: "=") else { throw GeneratorError("a typealias without a type: \(declaration)") }
            return .typeAlias(name: rest[..<equals].trimmingCharacters(in: .whitespaces), type: rest[rest.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        for kind in ["class", "struct", "enum", "protocol", "actor"] where text.hasPrefix(kind + " ") {
            let rest = text.dropFirst(kind.count + 1)
            let colon = rest.firstIndex(of: ":")
            let name = (colon.map { rest[..<$0] } ?? rest).trimmingCharacters(in: .whitespaces)
            let conformances = colon.map { splitTopLevel(String(rest[rest.index(after: $0)...]), by: ",") } ?? []
            return .nominal(kind: kind, name: name, conformances: conformances.map { $0.trimmingCharacters(in: .whitespaces) })
        }
        if text.hasPrefix("case ") {
            return .enumCase(name: text.dropFirst("case ".count).trimmingCharacters(in: .whitespaces))
        }
        if text.hasPrefix("var ") || text.hasPrefix("let ") {
            let isLet = text.hasPrefix("let ")
            var rest = Substring(text.dropFirst(4))
            var accessors = ""
            if let brace = rest.firstIndex(of: "{") {
                accessors = String(rest[brace...])
                rest = rest[..<brace]
            }
            guard let colon = rest.firstIndex(of: ":") else { throw GeneratorError("a property without a type: \(declaration)") }
            let name = rest[..<colon].trimmingCharacters(in: .whitespaces)
            var type = rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let equals = type.range(of: " = ") { type = String(type[..<equals.lowerBound]) }
            let settable = accessors.isEmpty ? !isLet : accessors.contains("set")
            return .value(name: name, type: type, isStatic: isStatic, settable: settable)
        }
        if text.hasPrefix("init") {
            var rest = Substring(text.dropFirst("init".count))
            var failable = false
            if rest.hasPrefix("?") || rest.hasPrefix("!") {
                failable = rest.hasPrefix("?")
                rest = rest.dropFirst()
            }
            guard rest.hasPrefix("(") else { throw GeneratorError("an initializer without parameters: \(declaration)") }
            let end = try closing(of: rest, from: rest.startIndex)
            let parameters = try parseParameters(String(rest[rest.index(after: rest.startIndex)..<rest.index(before: end)]))
            return .initializer(parameters: parameters, failable: failable, throwing: rest[end...].contains("throws"))
        }
        if text.hasPrefix("func ") {
            let rest = Substring(text.dropFirst("func ".count))
            guard let open = rest.firstIndex(of: "(") else { throw GeneratorError("a function without parameters: \(declaration)") }
            let name = rest[..<open].trimmingCharacters(in: .whitespaces)
            let end = try closing(of: rest, from: open)
            let parameters = try parseParameters(String(rest[rest.index(after: open)..<rest.index(before: end)]))
            let tail = rest[end...]
            var result = "Void"
            if let arrow = tail.range(of: "->") { result = tail[arrow.upperBound...].trimmingCharacters(in: .whitespaces) }
            let effects = arrowless(tail)
            return .function(name: name, parameters: parameters, result: result, isStatic: isStatic, isAsync: effects.contains("async"), throwing: effects.contains("throws"))
        }
        throw GeneratorError("a declaration of a form the generator does not know: \(declaration)")
    }

    /// The effects between a parameter list and its arrow.
    private static func arrowless(_ tail: Substring) -> Substring {
        tail.range(of: "->").map { tail[..<$0.lowerBound] } ?? tail
    }

    /// The index just past the bracket that closes the one at `open`.
    static func closing(of text: Substring, from open: Substring.Index) throws -> Substring.Index {
        var depth = 0
        var index = open
        while index < text.endIndex {
            switch text[index] {
            case "(", "[", "<": depth += 1
            case ")", "]": depth -= 1
            case ">" where index > text.startIndex && text[text.index(before: index)] != "-": depth -= 1
            default: break
            }
            index = text.index(after: index)
            if depth == 0 { return index }
        }
        throw GeneratorError("unbalanced brackets in \(text)")
    }

    /// `_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?` as parameters.
    static func parseParameters(_ list: String) throws -> [Parameter] {
        try splitTopLevel(list, by: ",").compactMap { part in
            let piece = part.trimmingCharacters(in: .whitespaces)
            if piece.isEmpty { return nil }
            guard let colon = topLevelColon(piece) else { throw GeneratorError("a parameter without a type: \(piece)") }
            let names = piece[..<colon].split(separator: " ").map(String.init)
            var type = piece[piece.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let equals = type.range(of: " = ") { type = String(type[..<equals.lowerBound]) }
            var isInout = false
            if type.hasPrefix("inout ") {
                isInout = true
                type = String(type.dropFirst("inout ".count))
            }
            let label = names.first == "_" ? nil : names.first
            return Parameter(label: label, type: type, isInout: isInout)
        }
    }

    private static func topLevelColon(_ text: String) -> String.Index? {
        var depth = 0
        for index in text.indices {
            switch text[index] {
            case "(", "[", "<": depth += 1
            case ")", "]", ">": depth -= 1
            case ":" where depth == 0: return index
            default: break
            }
        }
        return nil
    }
}

/// Splits `text` at each `separator` outside brackets.
func splitTopLevel(_ text: String, by separator: Character) -> [String] {
    var parts: [String] = []
    var current = ""
    var depth = 0
    var previous: Character = " "
    for character in text {
        switch character {
        case "(", "[", "<": depth += 1
        case ")", "]": depth -= 1
        case ">" where previous != "-": depth -= 1
        default: break
        }
        if character == separator && depth == 0 {
            parts.append(current)
            current = ""
        } else {
            current.append(character)
        }
        previous = character
    }
    parts.append(current)
    return parts
}
