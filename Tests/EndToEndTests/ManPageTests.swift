import AccountdProtocol
import AccountdTestSupport
import Foundation
import Testing

/// man/accountd.8 and man/accountctl.1 are generated from the programs' argument parsers by
/// swift-argument-parser's generate-manual plugin (`make man`) and committed. These tests fail
/// when a page no longer matches its program (an option or a command added, renamed or removed
/// without `make man`), and check that each page is a man page `man` reads.
@Suite struct ManPageTests {
    /// The options and commands a program declares, from `--experimental-dump-help` (the JSON
    /// the plugin reads): every displayed long option name, and every command name below the root.
    static func declared(by program: String) throws -> (options: Set<String>, commands: Set<String>) {
        let dump = try E2E.run(program, ["--experimental-dump-help"])
        try #require(dump.status == 0, "\(dump.stderr)")
        let json = try JSONParser.parse(dump.stdout)
        var options: Set<String> = []
        var commands: Set<String> = []
        func walk(_ command: JSONValue, root: Bool) {
            if !root, let name = command["commandName"]?.stringValue { commands.insert(name) }
            for argument in command["arguments"]?.arrayValue ?? [] where argument["shouldDisplay"] != false {
                for name in argument["names"]?.arrayValue ?? [] where name["kind"] == "long" {
                    if let text = name["name"]?.stringValue { options.insert("-" + text) }
                }
            }
            for subcommand in command["subcommands"]?.arrayValue ?? [] { walk(subcommand, root: false) }
        }
        walk(try #require(json["command"]), root: true)
        return (options, commands)
    }

    /// The options (`.It Fl ... -name`) and commands (`.It Em name`) a generated page lists.
    static func listed(in page: String) -> (options: Set<String>, commands: Set<String>) {
        var options: Set<String> = []
        var commands: Set<String> = []
        for line in page.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if line.hasPrefix(".It Fl ") {
                // ".It Fl s , -socket Ar socket": the long names are the words after Fl that begin with "-".
                for word in words.dropFirst(2).prefix(while: { $0 != "Ar" }) where word.hasPrefix("-") { options.insert(word) }
            } else if line.hasPrefix(".It Em "), words.count == 3 {
                commands.insert(words[2])
            }
        }
        return (options, commands)
    }

    @Test(arguments: [("accountd", "8"), ("accountctl", "1")])
    func thePageListsEveryOptionAndCommandOfItsProgram(program: String, section: String) throws {
        let path = Repository.root + "/man/\(program).\(section)"
        let page = try String(contentsOfFile: path, encoding: .utf8)
        #expect(page.contains(".Dt \(program.uppercased()) \(section)"), "\(path) is not section \(section)")
        let declared = try Self.declared(by: Binaries.directory + "/" + program)
        let listed = Self.listed(in: page)
        #expect(declared.options.count > 3 && declared.commands.count > 2, "\(declared)")
        #expect(
            listed.options == declared.options,
            "\(path) is stale (run make man): missing \(declared.options.subtracting(listed.options).sorted()), extra \(listed.options.subtracting(declared.options).sorted())")
        #expect(
            listed.commands == declared.commands,
            "\(path) is stale (run make man): missing \(declared.commands.subtracting(listed.commands).sorted()), extra \(listed.commands.subtracting(declared.commands).sorted())")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/man"), "needs /usr/bin/man"), arguments: ["accountd.8", "accountctl.1"])
    func manReadsThePage(file: String) throws {
        let rendered = try E2E.run("/usr/bin/man", ["-l", "-P", "cat", Repository.root + "/man/" + file], environment: ["MANWIDTH": "100", "PATH": "/usr/bin:/bin"])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.stdout.contains("NAME") && rendered.stdout.contains("SYNOPSIS"), "\(rendered.stdout.prefix(500))")
        #expect(!rendered.stderr.contains("warning"), "\(rendered.stderr)")
    }
}
