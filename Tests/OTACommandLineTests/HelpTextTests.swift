import Testing

/// Lines of `--help` that the docs and a newcomer rely on.
@Suite struct HelpTextTests {
    @Test func updateHelpNamesEveryKindOfFirmwareAndEveryExitCode() async {
        let (code, streams) = await runTool(["update", "--help"])
        #expect(code == 0)
        let lines = streams.outputLines
        #expect(
            lines.contains("  FIRMWARE                  a firmware image (.bin), a package directory with manifest.json, or a Nordic DFU .zip (nordic-dfu)"))
        #expect(lines.contains("4 device unavailable, 5 link lost or timed out, 70 a bug in ota, 130 interrupted"))
    }

    @Test func overviewSaysDevicesListsTheProfilesAndScanTheRest() async {
        let (code, streams) = await runTool(["--help"])
        #expect(code == 0)
        #expect(
            streams.outputLines.contains(
                "  devices     List the simulated hardware profiles for --device sim:PROFILE, which run any protocol ('ota scan' lists the fleet and real devices)."
            ))
        #expect(
            streams.outputLines.contains(
                "  completion  Print a bash or zsh completion script for ota's commands, options and their values."))
    }
}
