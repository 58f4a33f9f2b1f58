import ArgumentParser

/// Verbs the tool does not have, caught before ArgumentParser sees the command line: it would take an unknown
/// verb for a stray argument and complain about the verb's first flag instead ("Unknown option '-s'"), and
/// `help <unknown>` would print the general help and succeed.
enum UnknownCommand {
    /// The exit status of an unknown verb, as of every other usage error.
    static let exitStatus: Int32 = 2

    /// Why `arguments` (the command line after `security`) names no command, as the lines written to stderr:
    /// `unknown command 'x'; did you mean 'y'?`, or where to find the commands when none is close. `nil` when
    /// every verb the command line names exists (its flags and arguments are ArgumentParser's to check).
    ///
    /// `help VERB…` is checked the same way, so that asking for help on a verb that does not exist fails.
    static func message(for arguments: [String], root: any ParsableCommand.Type = SecurityTool.self) -> String? {
        let rootName = root._commandName
        var words = arguments[...]
        if words.first == "help" { words = words.dropFirst() }
        var command = root
        var path: [String] = []
        while let word = words.first, !word.hasPrefix("-") {
            let configuration = command.configuration
            let subcommands = configuration.subcommands
            // A verb (no subcommands) takes its own arguments; a group with a default verb passes them to it.
            guard !subcommands.isEmpty, configuration.defaultSubcommand == nil else { return nil }
            if let next = subcommands.first(where: { names(of: $0).contains(word) }) {
                command = next
                path.append(word)
                words = words.dropFirst()
                continue
            }
            // ArgumentParser's own `help` verb, at the top.
            if path.isEmpty && word == "help" { return nil }
            let candidates =
                subcommands.filter { $0.configuration.shouldDisplay }.map { $0._commandName }
                + (path.isEmpty ? ["help"] : [])
            let typed = (path + [word]).joined(separator: " ")
            let prefix = path.isEmpty ? "" : path.joined(separator: " ") + " "
            let suggestions = self.suggestions(for: word, among: candidates)
            switch suggestions.count {
            case 0:
                return "\(rootName): unknown command '\(typed)'\n"
                    + "\(rootName): run `\(rootName) help\(path.isEmpty ? "" : " " + path.joined(separator: " "))` for the list of commands.\n"
            case 1:
                return "\(rootName): unknown command '\(typed)'; did you mean '\(prefix)\(suggestions[0])'?\n"
            default:
                let listed = suggestions.map { "'\(prefix)\($0)'" }
                return "\(rootName): unknown command '\(typed)'; did you mean "
                    + listed.dropLast().joined(separator: ", ") + " or \(listed[listed.count - 1])?\n"
            }
        }
        return nil
    }

    /// The names a command answers to: its name and its aliases.
    static func names(of command: any ParsableCommand.Type) -> [String] {
        [command._commandName] + command.configuration.aliases
    }

    /// The commands `word` was probably meant to be: the closest by edit distance when it is close enough
    /// (a third of the word, at least two edits), else the commands that begin with it (at most five; none
    /// when more do, or when it is shorter than three characters).
    static func suggestions(for word: String, among candidates: [String]) -> [String] {
        let typed = Array(word.lowercased())
        let scored = candidates.map { (name: $0, distance: editDistance(typed, Array($0))) }
        if let best = scored.min(by: { $0.distance < $1.distance }),
            best.distance <= max(2, typed.count / 3)
        {
            return [best.name]
        }
        guard typed.count >= 3 else { return [] }
        let beginning = candidates.filter { $0.hasPrefix(word.lowercased()) }
        return beginning.count <= 5 ? beginning : []
    }

    /// The Levenshtein distance between `a` and `b`: the fewest insertions, deletions and substitutions that
    /// turn one into the other.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
