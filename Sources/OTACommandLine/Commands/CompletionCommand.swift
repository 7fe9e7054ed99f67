/// `ota completion SHELL`: prints a completion script generated from the command specifications.
enum CompletionCommand: Command {
    static let spec = CommandSpec(
        name: "completion",
        summary: "Print a bash or zsh completion script for ota's commands, options and their values.",
        options: [],
        positionals: [.init(name: "SHELL", help: "bash or zsh")],
        discussion: """
            bash: source <(ota completion bash) in ~/.bashrc, or save it as
              ~/.local/share/bash-completion/completions/ota
            zsh: source <(ota completion zsh) in ~/.zshrc after compinit, or save it as _ota in a
              directory of $fpath
            Sub-commands, options, protocol names, simulated devices, profiles and transports come
            from this build, so generate the script again after upgrading.
            """
    )

    static func run(_ arguments: ParsedArguments, streams: any OutputStreams, environment: ToolEnvironment) async -> ExitCode {
        let name = arguments.positionals[0]
        guard let shell = ShellCompletion.Shell(rawValue: name) else {
            let shells = ShellCompletion.Shell.allCases.map(\.rawValue).joined(separator: ", ")
            streams.err("ota: error: \(UsageError("no completion for shell '\(name)' (available: \(shells))", command: "completion"))\n")
            return .usage
        }
        let completion = ShellCompletion(commands: CommandLineTool.commands.map { $0.spec }, environment: environment)
        streams.out(completion.script(for: shell))
        return .success
    }
}
