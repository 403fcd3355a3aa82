#!/usr/bin/env bash
# The main job from a fresh clone: install dependencies (scripts/setup.sh), configure and build
# build/ (RelWithDebInfo), then run `strata demo`. Extra arguments go to `strata demo`
# (e.g. --quick, --out DIR). Needs no configuration and no network beyond the Debian archive.
#
#   bash scripts/demo.sh [--quick] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${STRATA_BUILD_DIR:-build}
bash scripts/setup.sh
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$BUILD" strata
exec "$BUILD/src/cli/strata" demo "$@"
