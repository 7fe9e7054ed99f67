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

# Wire messages, from the encoders.
bin=$(bash build.sh)
"$bin/fuzz-seeds" "$corpus"
du -sh "$corpus"
