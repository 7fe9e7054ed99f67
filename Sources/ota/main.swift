import OTACommandLine

await CommandLineTool.main()
