/// Parses a command's arguments: `--name value`, `--name=value`, flags, `-h`/`--help`,
/// positionals, and `--` to end options.
package enum ArgumentParser {
    package static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        parsed.words = arguments
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" || argument == "--help" {
                parsed.wantsHelp = true
                continue
            }
            let (name, inlineValue) = split(argument)
            guard let option = spec.option(named: name) else {
                throw UsageError("unknown option '\(name)' for '\(spec.invocation)'", command: spec.name)
            }
            guard let valueName = option.valueName else {
                if inlineValue != nil {
                    throw UsageError("option '\(name)' takes no value", command: spec.name)
                }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < arguments.count, !arguments[index].hasPrefix("--") {
                value = arguments[index]
                index += 1
            } else {
                throw UsageError("option '\(name)' needs a value (\(name) \(valueName))", command: spec.name)
            }
            if !option.repeatable, parsed.values[name] != nil {
                throw UsageError("option '\(name)' given twice", command: spec.name)
            }
            parsed.values[name, default: []].append(value)
        }
        if parsed.wantsHelp { return parsed }
        if parsed.positionals.count > spec.positionals.count {
            let extra = parsed.positionals[spec.positionals.count]
            throw UsageError("unexpected argument '\(extra)' for '\(spec.invocation)'", command: spec.name)
        }
        if parsed.positionals.count < spec.positionals.count, !spec.positionals[parsed.positionals.count].isOptional {
            let missing = spec.positionals[parsed.positionals.count]
            throw UsageError("missing \(missing.name) for '\(spec.invocation)'", command: spec.name)
        }
        return parsed
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard let (name, value) = splitAtEquals(argument) else { return (argument, nil) }
        return (name, value)
    }

    /// `text` split at its first `=`, found among Unicode scalars, not `Character`s: a combining
    /// mark after the `=` (`"=\u{301}"`) makes one `Character` that `firstIndex(of: "=")` misses
    /// (decision 0056). Nil when there is no `=`.
    package static func splitAtEquals(_ text: String) -> (String, String)? {
        let scalars = text.unicodeScalars
        guard let equals = scalars.firstIndex(of: "=") else { return nil }
        return (String(scalars[..<equals]), String(scalars[scalars.index(after: equals)...]))
    }
}
