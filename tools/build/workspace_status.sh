#!/usr/bin/env bash
# Bazel's --workspace_status_command (.bazelrc): the commit the tree is, for //log:version.
# A fresh clone has it; a copy without git says "unknown". STABLE_: a change rebuilds the stamp.
commit="$(git describe --always --dirty --exclude '*' 2>/dev/null || true)"
echo "STABLE_ONCHIP_COMMIT ${commit:-unknown}"
