import Foundation
import Testing

// The declaration tables must name every public symbol: a symbol without a row has no check, and a check is what
// keeps its type Apple's. The public symbols are read from the modules this build made, with the toolchain's
// swift-symbolgraph-extract.

/// The folder of the declaration tables (beside this file).
let declarationsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Declarations")

/// One module's table: symbol → (declaration, source).
func declarationTable(_ module: String) throws -> [(symbol: String, declaration: String, source: String, line: Int)] {
    let text = try String(contentsOf: declarationsFolder.appendingPathComponent("\(module).tsv"), encoding: .utf8)
    var rows: [(String, String, String, Int)] = []
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        if line.isEmpty || line.hasPrefix("#") { continue }
        let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard columns.count == 3 else { throw SymbolGraphError("\(module).tsv:\(index + 1): not three columns") }
        rows.append((columns[0], columns[1], columns[2], index + 1))
    }
    return rows
}

struct SymbolGraphError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The build this test runs from: its products folder (`.build/<triple>/debug`) and the toolchain's extractor.
struct BuildLayout {
    let products: URL
    let triple: String
    let extractor: String

    static let current: BuildLayout? = {
        guard let runner = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        var products = URL(fileURLWithPath: runner).deletingLastPathComponent()
        // The runner is `<products>/swift-keychainPackageTests.xctest`.
        if !FileManager.default.fileExists(atPath: products.appendingPathComponent("Modules").path) {
            products = products.deletingLastPathComponent()
        }
        guard FileManager.default.fileExists(atPath: products.appendingPathComponent("Modules/KeychainServices.swiftmodule").path) else { return nil }
        let triple = products.deletingLastPathComponent().lastPathComponent
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { "\($0)/swift-symbolgraph-extract" }
        guard let extractor = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        return BuildLayout(products: products, triple: triple.contains("-") ? triple : "x86_64-unknown-linux-gnu", extractor: extractor)
    }()

    /// The module maps of the C modules the Swift modules import: the checkouts', this package's, and those SwiftPM
    /// wrote for C targets without one.
    func moduleMaps() -> [String] {
        let build = products.deletingLastPathComponent().deletingLastPathComponent()
        let package = build.deletingLastPathComponent()
        var maps: [String] = []
        for root in [build.appendingPathComponent("checkouts"), package.appendingPathComponent("Sources")] {
            guard let walk = FileManager.default.enumerator(atPath: root.path) else { continue }
            for case let file as String in walk where file.hasSuffix("module.modulemap") {
                let parts = file.split(separator: "/")
                if parts.contains("Benchmarks") || parts.contains("Tests") { continue }
                maps.append(root.appendingPathComponent(file).path)
            }
        }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: products.path)) ?? [] where entry.hasSuffix(".build") {
            let map = products.appendingPathComponent(entry).appendingPathComponent("module.modulemap").path
            if FileManager.default.fileExists(atPath: map) { maps.append(map) }
        }
        return maps.sorted()
    }

    /// The public symbols of `module`: path → declaration, as the symbol graph gives them.
    func publicSymbols(of module: String) throws -> [String: String] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("symbols-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: extractor)
        process.arguments =
            [
                "-module-name", module, "-I", products.appendingPathComponent("Modules").path, "-target", triple,
                "-output-dir", output.path, "-skip-synthesized-members", "-minimum-access-level", "public",
            ] + moduleMaps().flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SymbolGraphError("swift-symbolgraph-extract failed for \(module):\n\(said)") }
        var symbols: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: output.path) where file.hasSuffix(".symbols.json") {
            let data = try Data(contentsOf: output.appendingPathComponent(file))
            let graph = try JSONDecoder().decode(SymbolGraph.self, from: data)
            for symbol in graph.symbols {
                let declaration = symbol.declarationFragments?.map(\.spelling).joined() ?? ""
                symbols[symbol.pathComponents.joined(separator: "."), default: ""] += declaration
            }
        }
        return symbols
    }
}

/// The part of a symbol graph file the tests read.
struct SymbolGraph: Decodable {
    struct Symbol: Decodable {
        struct Fragment: Decodable { var spelling: String }
        var pathComponents: [String]
        var declarationFragments: [Fragment]?
    }
    var symbols: [Symbol]
}

@Suite struct DeclarationTableTests {
    @Test(
        "every public symbol has a row in its module's declaration table, and every row a symbol",
        .enabled(if: BuildLayout.current != nil, "needs the build's Modules folder and swift-symbolgraph-extract on PATH"),
        arguments: ["KeychainServices", "LocalAuthentication"])
    func everyPublicSymbolHasARow(_ module: String) throws {
        let layout = try #require(BuildLayout.current)
        let symbols = try layout.publicSymbols(of: module)
        #expect(symbols.count > 10, "the symbol graph of \(module) is nearly empty: \(symbols.keys.sorted())")
        let rows = try declarationTable(module)
        let named = Set(rows.map(\.symbol))
        for (symbol, declaration) in symbols.sorted(by: { $0.key < $1.key }) where !named.contains(symbol) {
            Issue.record("\(module).\(symbol) has no row in Declarations/\(module).tsv (ours: \(declaration))")
        }
        for row in rows where symbols[row.symbol] == nil {
            Issue.record("Declarations/\(module).tsv:\(row.line): \(row.symbol) is not a public symbol of \(module)")
        }
    }

    @Test("every row gives Apple's declaration and where it comes from", arguments: ["KeychainServices", "LocalAuthentication"])
    func everyRowHasASource(_ module: String) throws {
        for row in try declarationTable(module) {
            let fromApple = row.source.hasPrefix("https://developer.apple.com/documentation/") || row.source.hasPrefix("https://github.com/")
            #expect(fromApple || row.source.hasPrefix("not in Apple's SDK: "), "\(module).tsv:\(row.line): \(row.source)")
        }
    }
}
