#!/usr/bin/env bash
# Runs the "## Installing" commands of README.md and docs/cli.md verbatim, as a newcomer would
# (the release build, the copy onto the PATH, the completion scripts saved where the shells look),
# then checks what they left: `ota` on the PATH, and the saved completion scripts loading in bash
# and, where it is installed, zsh. The docs' other commands run in-process in
# Tests/OTACommandLineTests/DocumentedCommandsTests.swift, which checks that this script exists.
#
# Writes /usr/local/bin/ota and files under $HOME: run it as root on a CI machine, or with HOME
# pointing at a scratch directory.
set -euo pipefail
cd "$(dirname "$0")/.."

# The lines of the ```sh blocks under a "## Installing" heading of $1.
installing_commands() {
    awk '
        /^## / { section = ($0 == "## Installing") }
        section && $0 == "```sh" { fence = 1; next }
        fence && /^```/ { fence = 0; next }
        fence && NF && !/^[[:space:]]*#/ { print }
    ' "$1"
}

for doc in README.md docs/cli.md; do
    commands=$(installing_commands "$doc")
    if [ -z "$commands" ]; then
        echo "check-install: $doc has no \"## Installing\" commands"
        exit 1
    fi
    while IFS= read -r line; do
        echo "check-install: $doc: $line"
        bash -euo pipefail -c "$line" < /dev/null
    done <<< "$commands"
done

installed=$(command -v ota) || { echo "check-install: ota is not on the PATH after installing"; exit 1; }
echo "check-install: $installed: $(ota --version)"
bash -c 'source ~/.local/share/bash-completion/completions/ota && complete -p ota' \
    || { echo "check-install: the saved bash completion does not load"; exit 1; }
if command -v zsh > /dev/null; then
    loaded=$(zsh -f -c 'fpath=(~/.zsh/completions $fpath); autoload -U compinit && compinit -u -D && print -r -- $_comps[ota]')
    [ "$loaded" = _ota ] || { echo "check-install: the saved zsh completion does not load (got '$loaded')"; exit 1; }
    echo "check-install: zsh completes ota with _ota"
else
    echo "check-install: zsh is not installed; only the bash completion was loaded"
fi
echo "check-install: ok"
