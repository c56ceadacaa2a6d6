#!/bin/sh
echo "bazel coverage is not available offline in onchip" >&2
exit 1
