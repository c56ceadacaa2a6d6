#!/bin/sh
# Runs a verbs program through tools/verbs_env/launch.py (the environment `tools/onchip run`
# prepares) with the plugin Bazel built. Arguments: LAUNCH_PY PLUGIN PROGRAM [ARGS...]
set -eu
launch="$1"; plugin="$2"; shift 2
exec /usr/bin/python3 "$launch" --plugin "$(readlink -f "$plugin")" -- "$@"
