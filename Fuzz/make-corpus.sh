#!/usr/bin/env bash
# Regenerates the seed corpora in Fuzz/Corpus/<target>/ from the real fixtures: the Nordic DFU
# packages of the tests (zips, their init packets and manifests), the JSON examples of
# docs/manifest.md, and wire messages made by the real encoders (the fuzz-seeds target). The
# seeds are small and checked in; run this after a fixture or a wire format changes.
set -euo pipefail
cd "$(dirname "$0")"
root=..
nordic=$root/Tests/OTAProtocolNordicDFUTests/Fixtures
corpus=Corpus

rm -rf "$corpus"
mkdir -p "$corpus"/{dfu-zip,init-packet,dfu-manifest,package-manifest,device-catalog,mcuboot-image,trace,esp-app-image,espressif-wire,trusted-key}
mkdir -p "$corpus"/{campaign-window,target-list,target-pattern,cli-arguments}

# Nordic packages: the zips whole, and what is inside them.
cp "$nordic"/*.zip "$corpus/dfu-zip/"
cp "$nordic/app.dat" "$corpus/init-packet/app.dat"
python3 - "$nordic" "$corpus" <<'PY'
import pathlib, sys, zipfile
fixtures, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for archive in sorted(fixtures.glob("*.zip")):
    with zipfile.ZipFile(archive) as zip:
        for name in zip.namelist():
            if name.endswith(".dat"):
                (corpus / "init-packet" / f"{archive.stem}-{name}").write_bytes(zip.read(name))
            elif name == "manifest.json":
                (corpus / "dfu-manifest" / f"{archive.stem}.json").write_bytes(zip.read(name))
PY

# MCUboot images made by the real imgtool, up to 8 KB (the 200 KB and 1 MB ones only slow the
# fuzzer down: what differs in them is the body, which the parser only hashes).
for image in "$root"/Tests/OTAProtocolMCUmgrTests/Fixtures/*.bin; do
    if [[ $(stat -c %s "$image") -le 8192 ]]; then cp "$image" "$corpus/mcuboot-image/"; fi
done

# ESP-IDF app images made by the real esptool, and the PEM keys of the fixtures.
cp "$root"/Tests/OTAProtocolEspressifTests/Fixtures/*.bin "$corpus/esp-app-image/"
cp "$root"/Tests/OTAProtocolNordicDFUTests/Fixtures/*.pem "$root"/Tests/OTAProtocolMCUmgrTests/Fixtures/*.pem "$corpus/trusted-key/"

# Recorded updates (one over real BlueZ, one of a failure), whole and their first 12 lines.
for trace in "$root"/Tests/OTACommandLineTests/Fixtures/traces/*.jsonl; do
    cp "$trace" "$corpus/trace/"
    head -n 12 "$trace" > "$corpus/trace/$(basename "$trace" .jsonl)-head.jsonl"
done

# docs/manifest.md's examples: catalogs have "catalog", packages "package".
python3 - "$root/docs/manifest.md" "$corpus" <<'PY'
import pathlib, re, sys
text, corpus = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
for index, block in enumerate(re.findall(r"```json\n(.*?)```", text, re.S)):
    kind = "device-catalog" if '"catalog"' in block else "package-manifest" if '"package"' in block else None
    if kind:
        (corpus / kind / f"manifest-md-{index}.json").write_text(block)
PY

# A package manifest that opens: the fuzz target's directory holds app.bin = "OTA\n".
digest=$(printf 'OTA\n' | sha256sum | cut -d' ' -f1)
cat > "$corpus/package-manifest/valid.json" <<JSON
{ "package": 1, "name": "fuzz", "version": "1.0", "protocol": "generic", "families": ["acme-sensor"],
  "hardware": ["rev-b"], "images": [ { "file": "app.bin", "size": 4, "sha256": "$digest" } ] }
JSON
cat > "$corpus/device-catalog/minimal.json" <<'JSON'
{ "catalog": 1, "families": [ { "name": "nordic-thermo", "match": { "services": ["FE59"], "name": "Thermo-*" },
  "protocol": "nordic-dfu", "timeouts": { "response": 2.5 }, "resume": { "attempts": 0 } } ] }
JSON

# Campaign windows (decision 0044): a date (8 bytes, tenths of a second since 1970,
# little-endian; here 2026-12-02 04:00 UTC), then the --window text.
seed_date() { printf '\x80\xed\x9b\x2e\x04\x00\x00\x00'; }
for window in 22:00-05:00 22:00-05:00Z "08:30-17:00 UTC" 22:00-05:00+02:00 23:59-00:00-14:00 00:00-23:59+14:00 "01:00-02:00 -05:30"; do
    { seed_date; printf '%s' "$window"; } > "$corpus/campaign-window/$(printf '%s' "$window" | tr -c '0-9A-Za-z' '_').txt"
done

# Target and stage lists (NUL between the target list and each stage list) and name patterns
# (NUL between the pattern and each name), as the fuzz targets read them.
printf 'C0:DE:00:00:00:01\nlock-2\n# the second site\n\n  meter-3  \r\nsensor-5\n' > "$corpus/target-list/list.txt"
printf 'lock-1\nsensor-2\nmeter-3\nC0:DE:00:00:00:07\n\0# canary\nC0:DE:00:00:00:01\nlock-1\n\0lock-7\n' > "$corpus/target-list/list-and-stages.txt"
printf '\0C0:DE:00:00:00:01\n\0lock-7\nC0:DE:00:00:00:05\n' > "$corpus/target-list/stages-only.txt"
printf 'lock-*\0lock-1\0sensor-2\0lock-' > "$corpus/target-pattern/name.txt"
printf 'C0:DE:00:00:*\0C0:DE:00:00:00:01\0C0:DE:00:01:00:01' > "$corpus/target-pattern/address.txt"
printf '*-?\0lock-1\0meter-10' > "$corpus/target-pattern/question.txt"
printf 'a*b*c*\0aXbYcZ\0acb' > "$corpus/target-pattern/stars.txt"
printf 'lock-[12]\0lock-1' > "$corpus/target-pattern/refused.txt"
# Command lines (NUL between arguments), as the cli-arguments target reads them.
printf 'update\0fw.bin\0--protocol\0nordic-dfu\0--device\0sim:nrf52840\0--param\0prn=auto\0--sim-disconnect-at\0300K\0--seed=7' > "$corpus/cli-arguments/update.txt"
printf 'image\0test\0deadbeef\0--device=sim:zephyr-sensor\0--json' > "$corpus/cli-arguments/image-test.txt"
printf 'image\0erase\0--slot=1\0--sim-speed\0max' > "$corpus/cli-arguments/image-erase.txt"
printf 'campaign\0create\0--target-name\0lock-*\0--\0--odd.bin' > "$corpus/cli-arguments/campaign.txt"
printf 'benchmark\0--size\0200K\0--param=window=4\0-h' > "$corpus/cli-arguments/benchmark.txt"
printf 'scan\0--timeout\0\0--sim-battery\0none' > "$corpus/cli-arguments/scan.txt"

# Wire messages and simulated devices' files, from the encoders and models.
bin=$(bash build.sh)
"$bin/fuzz-seeds" "$corpus"

# What the fuzzers found (decision 0052), kept as seeds; each has a regression test.
# A '*' against a name holding a '*' (GlobPattern took it literally): CampaignTargetSelectionTests.
printf '*\0*-?' > "$corpus/target-pattern/found-star-against-star.txt"
# A group naming a device by address and by name (the name reported as naming none).
printf '\0C0:DE:00:00:00:02\nsensor-2\n' > "$corpus/target-list/found-address-and-name.txt"
# Fullwidth digits in an image hash (a crash, UInt8(_:radix:) of what isHexDigit accepted) and a
# combining mark after '=' (one Character, so the split missed it): HostileArgumentTextTests.
printf 'image\0test\0\xef\xbc\x91\xef\xbc\x92\xef\xbc\x93\xef\xbc\x94\xef\xbc\x95\xef\xbc\x96\xef\xbc\x97\xef\xbc\x98' > "$corpus/cli-arguments/found-fullwidth-hash.txt"
printf 'update\0fw.bin\0--protocol=\xcc\x81generic' > "$corpus/cli-arguments/found-combining-equals.txt"
# A Nordic progress with a PRN past 16 bits (clamped to 65535): NordicBootloaderModelTests.
{
    printf '\x02\x36\x00NordicDFU-progress-1\n\x02'
    printf '\x8d\x00\x00\x00\x00\x28\x00\x00\x78\x56\x34\x12\x00\x20\x00\x00\xf0\xde\xbc\x9a\x01\x10\x00\x00\x0c\x00\x03\x00\x00\x00\x00\x00'
    printf '\x00\x02\x06\x02'
} > "$corpus/sim-device-state/found-wide-prn.bin"
du -sh "$corpus"
