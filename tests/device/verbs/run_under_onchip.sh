#!/bin/sh
# Runs a verbs program through tools/verbs_env/launch.py (the environment `tools/onchip run`
# prepares) with the plugin Bazel built. The plugin's directory is on LD_LIBRARY_PATH for
# programs that link it (-lonchip-rdmav34). Arguments: LAUNCH_PY PLUGIN PROGRAM [ARGS...]
set -eu
launch="$1"; plugin="$(readlink -f "$2")"; shift 2
LD_LIBRARY_PATH="$(dirname "$plugin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec /usr/bin/python3 "$launch" --plugin "$plugin" -- "$@"
