#!/bin/sh
# Checkpoint benchmark: strata async save stall vs torch.save, persist
# throughput vs a plain write+fsync, verified load. Usage:
#   bench/ckpt_bench.sh [--gib 4] [ckpt_bench options...]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
ninja -C "$BUILD" ckpt_bench >/dev/null
mkdir -p "$ROOT/bench/out"
echo "reproduce: BUILD=$BUILD $0 $*"
"$BUILD/bench/ckpt_bench" --out "$ROOT/bench/out/ckpt.json" "$@"
