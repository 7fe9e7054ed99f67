extension CommandSpec.Option {
    /// The options of a command that reaches one device (`update`, `abort`): `--protocol`,
    /// `--device`, `--adapter`, then `linkOptions` (how a real device is written to), then
    /// `--param`. ``UpdatePlan`` reads them for both commands, so they are declared once.
    ///
    /// - Parameters:
    ///   - protocolHelp: what `--protocol` chooses by default for this command.
    ///   - deviceNote: appended to `--device`'s help (where to look addresses up).
    ///   - parameterNote: appended to `--param`'s help.
    static func deviceTarget(
        protocolHelp: String, deviceNote: String = "", linkOptions: [Self] = [], parameterNote: String = ""
    ) -> [Self] {
        [
            Self(name: "--protocol", valueName: "NAME", help: protocolHelp),
            Self(
                name: "--device", valueName: "ADDRESS",
                help: "AA:BB:CC:DD:EE:FF (BlueZ), sim:NAME, or for SMP udp:HOST[:PORT] and serial:PATH[@BAUD]; default \(SimulatedTarget.defaultAddress)"
                    + deviceNote),
            Self(
                name: "--adapter", valueName: "NAME",
                help: "Bluetooth adapter for a real device, e.g. hci0; default the first powered one"),
        ] + linkOptions + [
            Self(name: "--param", valueName: "KEY=VALUE", help: "protocol parameter, repeatable" + parameterNote, repeatable: true)
        ]
    }
}
