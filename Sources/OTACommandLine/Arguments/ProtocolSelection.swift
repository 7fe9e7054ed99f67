import OTACore

extension ProtocolRegistry {
    /// The protocols a repeatable `--protocol` names, in that order; every registered protocol
    /// when it is not given (`ota protocols`, `ota benchmark`).
    ///
    /// - Throws: ``UsageError`` for `command` when a name is not registered.
    func selected(by arguments: ParsedArguments, command: String) throws(UsageError) -> [ProtocolDescriptor] {
        var descriptors: [ProtocolDescriptor] = []
        for name in arguments.values["--protocol"] ?? all.map(\.name) {
            do {
                descriptors.append(try descriptor(named: name))
            } catch {
                throw UsageError(error.message, command: command)
            }
        }
        return descriptors
    }
}
