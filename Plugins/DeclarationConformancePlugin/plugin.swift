import Foundation
import PackagePlugin

/// Generates the conformance test target's compile-time checks from its declaration tables
/// (`Declarations/*.tsv`): one function per public symbol of KeychainServices and LocalAuthentication.
@main
struct DeclarationConformancePlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let folder = target.directoryURL.appending(path: "Declarations")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tsv") }.sorted()
        let tables = names.map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "DeclarationChecks.swift")
        return [
            .buildCommand(
                displayName: "Generating the declaration checks of \(target.name)",
                executable: try context.tool(named: "declaration-conformance-generator").url,
                arguments: [output.path] + tables.map(\.path),
                inputFiles: tables,
                outputFiles: [output])
        ]
    }
}
